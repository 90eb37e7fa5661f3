//! Secrets planted in the collector's inputs by the tests, and the search for any trace of them
//! in an output (the whole value, or any 12-character piece of its core).
//!
//! Besides one secret of each kind ([`SECRETS`]), every shape the redaction gate knows
//! ([`SHAPES`]) is planted glued to each kind of neighbour ([`GLUED`]): a key right after a
//! letter, a digit, `_`, an escaped newline or a URL-encoded `=` must be caught as surely as
//! one after a space (issue 21).

use std::sync::LazyLock;

/// One planted secret of each kind, and the part of it that must never show.
pub struct Secret {
    pub kind: &'static str,
    pub value: &'static str,
    pub core: &'static str,
}

pub const SK: Secret = Secret {
    kind: "anthropic key",
    value: "sk-ant-api03-PLANTEDkeyQ7mXw2Rt9Lp4Zc8Vb1Nd6Hf3",
    core: "sk-ant-api03-PLANTEDkeyQ7mXw2Rt9Lp4Zc8Vb1Nd6Hf3",
};
pub const BEARER: Secret = Secret {
    kind: "bearer token",
    value: "Bearer PLANTEDbearerT0k3nQ9wE2rT7yU4iO1pA6sD",
    core: "PLANTEDbearerT0k3nQ9wE2rT7yU4iO1pA6sD",
};
pub const JWT: Secret = Secret {
    kind: "jwt",
    value: "eyJhbGciOiJIUzI1NiJ9.eyJQTEFOVEVEc3ViIjoiand0In0.PLANTEDjwtSigR4nD0mS1gN4tUr3xYz",
    core: "eyJhbGciOiJIUzI1NiJ9.eyJQTEFOVEVEc3ViIjoiand0In0.PLANTEDjwtSigR4nD0mS1gN4tUr3xYz",
};
pub const URL_CREDS: Secret = Secret {
    kind: "credentials in a URL",
    value: "https://plantuser:PLANTEDurlPa55w0rd@vault.example.invalid/x",
    core: "plantuser:PLANTEDurlPa55w0rd",
};
pub const HASH: Secret = Secret {
    kind: "0x 64-hex hash",
    value: "0x5f2b1d0c8a7e6f4b3a29180716253443526170819a8b7c6d5e4f3a2b1c0d9e8f",
    core: "5f2b1d0c8a7e6f4b3a29180716253443526170819a8b7c6d5e4f3a2b1c0d9e8f",
};
pub const SECRETS: [&Secret; 5] = [&SK, &BEARER, &JWT, &URL_CREDS, &HASH];

/// One value of every shape in backend/src/redact.rs, for [`GLUED`]. Each holds PLANTED but the
/// 0x hash (hex only: its core is its digits). All but the hash fit a peer's 64-character label
/// with a three-character neighbour on each side, so they reach the model and lane fields too.
pub const SHAPES: [&Secret; 17] = [
    &Secret {
        kind: "Anthropic key",
        value: "sk-ant-api03-PLANTEDg1uK7mXw2Rt9Lp4Zc",
        core: "sk-ant-api03-PLANTEDg1uK7mXw2Rt9Lp4Zc",
    },
    &Secret {
        kind: "OpenAI project key",
        value: "sk-proj-PLANTEDg1uPj8Qw3Er5Ty7Ui9Op",
        core: "sk-proj-PLANTEDg1uPj8Qw3Er5Ty7Ui9Op",
    },
    // Glued to a word character, a plain `sk-` key is held to 40+ characters (the gate keeps
    // `disk-usage-monitoring`); real ones are 48.
    &Secret {
        kind: "plain sk- key",
        value: "sk-PLANTEDg1uPlain0Kx8Mq2Wn4Ez6Rc5Tv7Yb9Nh3",
        core: "sk-PLANTEDg1uPlain0Kx8Mq2Wn4Ez6Rc5Tv7Yb9Nh3",
    },
    &Secret {
        kind: "GitHub token",
        value: "ghp_PLANTEDg1uGh0Tk3nQ7mXw2Rt9Lp4Zc8Vb",
        core: "ghp_PLANTEDg1uGh0Tk3nQ7mXw2Rt9Lp4Zc8Vb",
    },
    &Secret {
        kind: "GitHub fine-grained token",
        value: "github_pat_PLANTEDg1u_Pat0Q7mXw2Rt9Lp4Zc8",
        core: "github_pat_PLANTEDg1u_Pat0Q7mXw2Rt9Lp4Zc8",
    },
    &Secret {
        kind: "GitLab token",
        value: "glpat-PLANTEDg1uGl4b-Q7mXw2Rt",
        core: "glpat-PLANTEDg1uGl4b-Q7mXw2Rt",
    },
    &Secret {
        kind: "AWS access key id",
        value: "AKIAPLANTED7G1UQ4XZ2",
        core: "AKIAPLANTED7G1UQ4XZ2",
    },
    &Secret {
        kind: "Google API key",
        value: "AIzaPLANTEDg1uAiz4Q7mXw2Rt9Lp4Zc8Vb1Nd6",
        core: "AIzaPLANTEDg1uAiz4Q7mXw2Rt9Lp4Zc8Vb1Nd6",
    },
    &Secret {
        kind: "Slack token",
        value: "xoxb-PLANTED-g1u5lack0Q7mXw2",
        core: "xoxb-PLANTED-g1u5lack0Q7mXw2",
    },
    &Secret {
        kind: "Telegram bot token",
        value: "123456789:PLANTEDg1uTg0Q7mXw2Rt9Lp4Zc8Vb1Nd6H",
        core: "123456789:PLANTEDg1uTg0Q7mXw2Rt9Lp4Zc8Vb1Nd6H",
    },
    &Secret {
        kind: "PEM private key",
        value: "-----BEGIN PLANTED PRIVATE KEY-----",
        core: "-----BEGIN PLANTED PRIVATE KEY-----",
    },
    &Secret {
        kind: "key=value secret",
        value: "api_key=PLANTEDg1uV4lue0Q7mX",
        core: "api_key=PLANTEDg1uV4lue0Q7mX",
    },
    &Secret {
        kind: "bearer token",
        value: "Bearer PLANTEDg1uB34rer0Q7mXw2Rt9",
        core: "PLANTEDg1uB34rer0Q7mXw2Rt9",
    },
    &Secret {
        kind: "basic auth header",
        value: "Basic PLANTEDg1uBa51c0Q7mXw2Rt9=",
        core: "PLANTEDg1uBa51c0Q7mXw2Rt9=",
    },
    &Secret {
        kind: "jwt",
        value: "eyJhbGciOiJI.eyJQTEFOVEVEZzF1In0.PLANTEDg1uJwt0Q7m",
        core: "eyJhbGciOiJI.eyJQTEFOVEVEZzF1In0.PLANTEDg1uJwt0Q7m",
    },
    &Secret {
        kind: "credentials in a URL",
        value: "https://g1user:PLANTEDg1uUrlPw@h.invalid/x",
        core: "g1user:PLANTEDg1uUrlPw",
    },
    &Secret {
        kind: "0x 64-hex hash",
        value: "0xeaf664609dde6d1f9e7c52158396b4f968e97a0073b82b6ae79be5f580ed27a1",
        core: "eaf664609dde6d1f9e7c52158396b4f968e97a0073b82b6ae79be5f580ed27a1",
    },
];

/// What a glued secret touches on both sides: a letter, a digit, `_`, an escaped newline as it
/// stands inside JSON text, a URL-encoded `=`, and `=` and `:` with no space.
pub const NEIGHBOURS: [&str; 7] = ["x", "7", "_", "\\n", "%3D", "=", ":"];

/// One shape glued to one neighbour.
pub struct Glued {
    pub shape: &'static Secret,
    pub neighbour: &'static str,
    /// `{neighbour}{shape}{neighbour}`.
    pub value: String,
}

impl Glued {
    /// Without whitespace: fit for a task id, a word of a metric line, a file name's part.
    pub fn is_word(&self) -> bool {
        !self.value.contains(char::is_whitespace)
    }
}

/// Every shape of [`SHAPES`] glued to every neighbour of [`NEIGHBOURS`].
pub static GLUED: LazyLock<Vec<Glued>> = LazyLock::new(|| {
    SHAPES
        .iter()
        .flat_map(|shape| {
            NEIGHBOURS.iter().map(move |n| Glued {
                shape,
                neighbour: n,
                value: format!("{n}{}{n}", shape.value),
            })
        })
        .collect()
});

/// The value of [`GLUED`] of the shape of that `kind` glued to `neighbour`.
pub fn glued(kind: &str, neighbour: &str) -> &'static str {
    GLUED
        .iter()
        .find(|g| g.shape.kind == kind && g.neighbour == neighbour)
        .unwrap_or_else(|| panic!("no {kind} glued to {neighbour:?}"))
        .value
        .as_str()
}

/// The values of [`GLUED`] without whitespace (see [`Glued::is_word`]).
pub fn glued_words() -> Vec<&'static str> {
    GLUED
        .iter()
        .filter(|g| g.is_word())
        .map(|g| g.value.as_str())
        .collect()
}

/// The values of [`GLUED`], space-separated, packed into texts of at most `max` characters:
/// for an input that quotes one line, short of any cut.
pub fn glued_packed(max: usize) -> Vec<String> {
    let mut texts = vec![String::new()];
    for g in GLUED.iter() {
        let last = texts.last_mut().unwrap();
        if !last.is_empty() && last.len() + 1 + g.value.len() > max {
            texts.push(String::new());
        }
        let last = texts.last_mut().unwrap();
        if !last.is_empty() {
            last.push(' ');
        }
        last.push_str(&g.value);
    }
    texts
}

/// One text per shape, glued to each neighbour in turn, placed so that a cut of the quoted line
/// at `cut` characters falls 20 characters into it, when the input puts `lead` characters
/// before the text: a cut before the redaction would leave a piece no shape matches.
pub fn glued_across_a_cut(cut: usize, lead: usize) -> Vec<String> {
    (0..SHAPES.len())
        .map(|k| {
            let g = &GLUED[k * NEIGHBOURS.len() + k % NEIGHBOURS.len()];
            format!("{} {}", "a".repeat(cut - 20 - lead - 1), g.value)
        })
        .collect()
}

/// Every value of [`GLUED`], space-separated: one text that carries them all.
pub fn glued_text() -> String {
    GLUED
        .iter()
        .map(|g| g.value.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Where in `text` a planted secret (or a 12-character piece of one, or the word PLANTED that
/// marks every planted value) shows, if it does.
pub fn find_secret(text: &str) -> Option<String> {
    const WINDOW: usize = 12;
    for secret in SECRETS.into_iter().chain(SHAPES) {
        if text.contains(secret.value) {
            return Some(format!("the {} whole", secret.kind));
        }
        for piece in secret.core.as_bytes().windows(WINDOW) {
            let piece = std::str::from_utf8(piece).unwrap();
            if text.contains(piece) {
                return Some(format!("a piece of the {} ({piece:?})", secret.kind));
            }
        }
    }
    text.contains("PLANTED")
        .then(|| "a planted marker".to_string())
}
