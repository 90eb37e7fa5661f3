//! Secrets planted in the collector's inputs by the tests, and the search for any trace of them
//! in an output (the whole value, or any 12-character piece of its core).

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

/// Where in `text` a planted secret (or a 12-character piece of one, or the word PLANTED that
/// marks every planted value) shows, if it does.
pub fn find_secret(text: &str) -> Option<String> {
    const WINDOW: usize = 12;
    for secret in SECRETS {
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
