//! What the page's server must do, checked the same way against the production nginx config
//! (tests/nginx.rs) and `fleetdash serve` (tests/serve.rs): a fixture with a realistic trunk
//! build and a real collector output, a raw HTTP/1.1 client, the two servers, and
//! [`assert_serves_like_production`], the one list of assertions both must pass.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use socket2::{Domain, Socket, Type};

use crate::support::{self, Scratch, agent_toml, refused_endpoint};

pub const USER: &str = "young";
pub const PASSWORD: &str = "correct horse battery";

pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// The manifest's icons: not hashed, kept a day by the browser alone (issue 46).
pub const ICON_CACHE: &str = "max-age=86400";

/// A scratch directory laid out like a production host: the page ([`Page`]), `out/` (the
/// collector's output_dir, with a real `status.json`), `htpasswd`, and `fleetdash.toml`
/// pointing `fleetdash serve` at them.
pub struct Fixture {
    pub scratch: Scratch,
    pub config: PathBuf,
    /// Where the page's files are (what the server must answer with, byte for byte).
    pub dist: PathBuf,
    pub out: PathBuf,
    pub htpasswd: PathBuf,
    /// Asset URL paths, e.g. `/fleetdash-frontend-4f1c2a9be07d3e56_bg.wasm`.
    pub wasm: String,
    pub js: String,
    /// The page's stylesheet file, if it has one: the real page has it inline in index.html
    /// (issue 46: a linked one blocks the first paint), the fake page links one.
    pub css: Option<String>,
    /// nginx's `{{INTAKE}}`: where `/act` goes (by default a port nothing listens on).
    pub intake: String,
}

/// Which page the fixture's server serves.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Page {
    /// A trunk-like build written by the test in `dist/`, named by `[serve] dist_dir`.
    Fake,
    /// The page built into fleetdash (the repository's `page/`): no `dist_dir`.
    Embedded,
    /// `fleetdash page export dist`, as a host installs it for nginx, named by `dist_dir`.
    Exported,
}

impl Fixture {
    pub fn new() -> Fixture {
        Fixture::with_page(Page::Fake)
    }

    pub fn with_page(page: Page) -> Fixture {
        let scratch = Scratch::new();
        let audit = scratch.audit_log("vega", 90.0);
        let serve = match page {
            Page::Embedded => "[serve]\nhtpasswd = \"htpasswd\"\n",
            Page::Fake | Page::Exported => {
                "[serve]\nhtpasswd = \"htpasswd\"\ndist_dir = \"dist\"\n"
            }
        };
        let body = agent_toml("vega", &refused_endpoint(), "v1", &audit) + serve;
        let config = scratch.config(&body);
        let root = scratch.path().to_path_buf();

        // What `htpasswd -B` writes: bcrypt in its $2y$ spelling.
        let hash = bcrypt::hash_with_result(PASSWORD, 5)
            .unwrap()
            .format_for_version(bcrypt::Version::TwoY);
        let htpasswd = root.join("htpasswd");
        std::fs::write(&htpasswd, format!("{USER}:{hash}\n")).unwrap();

        // The real collector writes the snapshot.
        let collected = scratch.collect(&config);
        assert!(
            collected.status.success(),
            "fleetdash collect failed: {}",
            String::from_utf8_lossy(&collected.stderr)
        );
        let out = root.join("out");
        let snapshot_html = out.join("snapshot.html");
        if !snapshot_html.exists() {
            // Until the collector writes it, a stand-in with the same name and role.
            std::fs::write(&snapshot_html, snapshot_page()).unwrap();
        }
        // Must never be served: the atomic writer's temp file and an unrelated file.
        std::fs::write(out.join(".tmp-x"), "half-written snapshot\n").unwrap();
        std::fs::write(out.join("secret.txt"), "not for the web\n").unwrap();

        let (dist, wasm, js, css) = match page {
            Page::Fake => fake_dist(&root.join("dist")),
            Page::Embedded => {
                let dist = support::repo_root().join("page");
                let (wasm, js, css) = assets_of(&dist);
                (dist, wasm, js, css)
            }
            Page::Exported => {
                let dist = root.join("dist");
                let exported = support::fleetdash()
                    .args(["page", "export"])
                    .arg(&dist)
                    .output()
                    .unwrap();
                support::assert_success(&exported);
                let (wasm, js, css) = assets_of(&dist);
                (dist, wasm, js, css)
            }
        };
        if page != Page::Embedded {
            std::fs::write(dist.join(".hidden"), "dotfile in dist\n").unwrap();
        }

        // Started as root, nginx's workers run as `nobody`: everything they read must be
        // world-readable, as it would be on a host (tempdirs are 0700).
        for dir in [root.as_path(), &out] {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        if page != Page::Embedded {
            std::fs::set_permissions(&dist, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::set_permissions(&htpasswd, std::fs::Permissions::from_mode(0o644)).unwrap();

        Fixture {
            scratch,
            config,
            dist,
            out,
            htpasswd,
            wasm,
            js,
            css,
            intake: "127.0.0.1:9".into(),
        }
    }

    pub fn status_json(&self) -> Vec<u8> {
        std::fs::read(self.out.join("status.json")).unwrap()
    }

    /// Runs the collector again: a new `status.json` (new mtime, so a new ETag).
    pub fn collect_again(&self) {
        let collected = self.scratch.collect(&self.config);
        assert!(collected.status.success());
    }

    /// What `/` answers: the first HTML the collector wrote into output_dir (issue 46: the
    /// page's index.html with the verdict in it) when it was written from this fixture's page;
    /// else the page's own index.html (the fake page is another page than the collector's).
    pub fn root_page(&self) -> Vec<u8> {
        self.first_html()
            .unwrap_or_else(|| self.dist_file("/index.html"))
    }

    /// The first HTML in output_dir, if it was written from this fixture's page.
    pub fn first_html(&self) -> Option<Vec<u8>> {
        let page = fleetdash::write::first_html::page_id(&self.dist_file("/index.html"));
        std::fs::read(self.out.join("index.html"))
            .ok()
            .filter(|html| {
                fleetdash::write::first_html::is_for(&String::from_utf8_lossy(html), &page)
            })
    }

    /// The file behind a URL path of the page.
    pub fn dist_file(&self, url_path: &str) -> Vec<u8> {
        std::fs::read(self.dist.join(url_path.trim_start_matches('/'))).unwrap()
    }
}

/// A trunk-like build in `dist`: hashed wasm (with a pre-compressed copy), JS and CSS, and an
/// index.html naming them. Returns `dist` and the assets' URL paths.
fn fake_dist(dist: &Path) -> (PathBuf, String, String, Option<String>) {
    std::fs::create_dir_all(dist).unwrap();
    let wasm = hashed_file(
        dist,
        "fleetdash-frontend",
        "_bg.wasm",
        &fake_wasm(48 * 1024),
    );
    // The build ships a pre-compressed copy (scripts/build-frontend); servers must send it
    // as is. A file name in the gzip header tells it apart from on-the-fly compression.
    let wasm_file = dist.join(wasm.trim_start_matches('/'));
    let mut gz = flate2::GzBuilder::new()
        .filename("precompressed")
        .write(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut gz, &std::fs::read(&wasm_file).unwrap()).unwrap();
    std::fs::write(wasm_file.with_extension("wasm.gz"), gz.finish().unwrap()).unwrap();
    let js = hashed_file(dist, "fleetdash-frontend", ".js", &fake_js());
    let css = hashed_file(dist, "style", ".css", FAKE_CSS.as_bytes());
    std::fs::write(dist.join("index.html"), index_html(&js, &wasm, &css)).unwrap();
    (dist.to_path_buf(), wasm, js, Some(css))
}

/// The URL paths of a real build's wasm, JS and CSS (one of each, by their trunk names; the
/// real page has no CSS file: its stylesheet is inline).
pub fn assets_of(dist: &Path) -> (String, String, Option<String>) {
    let names: Vec<String> = std::fs::read_dir(dist)
        .unwrap_or_else(|e| panic!("{}: {e}", dist.display()))
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let one = |suffix: &str| {
        // sw.js is JavaScript too, but no asset the page loads (not hashed).
        let found: Vec<&String> = names
            .iter()
            .filter(|n| n.ends_with(suffix) && fleetdash::page::is_hashed_asset(&format!("/{n}")))
            .collect();
        assert_eq!(
            found.len(),
            1,
            "one *{suffix} in {}: {names:?}",
            dist.display()
        );
        format!("/{}", found[0])
    };
    let css = names
        .iter()
        .find(|n| n.ends_with(".css") && fleetdash::page::is_hashed_asset(&format!("/{n}")))
        .map(|n| format!("/{n}"));
    (one("_bg.wasm"), one(".js"), css)
}

/// Writes `dist/<stem>-<hash><suffix>` the way trunk names it; returns its URL path.
fn hashed_file(dist: &Path, stem: &str, suffix: &str, bytes: &[u8]) -> String {
    let name = format!("{stem}-{:016x}{suffix}", fnv1a(bytes) | (1 << 63));
    std::fs::write(dist.join(&name), bytes).unwrap();
    format!("/{name}")
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100000001b3)
    })
}

/// A syntactically plausible module: the wasm magic and version, then a custom section of
/// mixed bytes (compressible, like real code, but not a run of zeros).
fn fake_wasm(size: usize) -> Vec<u8> {
    let mut bytes = b"\0asm\x01\0\0\0".to_vec();
    let mut x: u32 = 0x2545_f491;
    while bytes.len() < size {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        // A small alphabet, as opcodes and LEB128 indices are.
        bytes.push(b"\x20\x21\x41\x10\x0b\x28\x36\x6a"[(x % 8) as usize]);
    }
    bytes
}

fn fake_js() -> Vec<u8> {
    let mut js = String::from("let wasm;\nconst cachedTextDecoder = new TextDecoder('utf-8');\n");
    for i in 0..200 {
        js.push_str(&format!(
            "export function __wbg_get_{i}(arg0, arg1) {{ const ret = getObject(arg0)[arg1 >>> 0]; return addHeapObject(ret); }}\n"
        ));
    }
    js.push_str("export default async function init(module_or_path) { /* ... */ }\n");
    js.into_bytes()
}

const FAKE_CSS: &str = "\
:root { color-scheme: light dark; --green: #2e7d32; --amber: #ff8f00; --red: #c62828; }
body { margin: 0; font: 15px/1.4 system-ui, sans-serif; }
.boot { padding: 1rem; }
.row { display: grid; grid-template-columns: 1fr auto auto; gap: .5rem; padding: .25rem 1rem; }
.row.red { border-left: 4px solid var(--red); }
.row.amber { border-left: 4px solid var(--amber); }
.row.green { border-left: 4px solid var(--green); }
.stale { background: var(--amber); color: black; padding: .5rem 1rem; }
";

fn index_html(js: &str, wasm: &str, css: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>fleetdash</title>\n<link rel=\"stylesheet\" href=\"{css}\">\n\
         <link rel=\"modulepreload\" href=\"{js}\">\n\
         <link rel=\"preload\" href=\"{wasm}\" as=\"fetch\" type=\"application/wasm\" crossorigin>\n\
         <script type=\"module\">import init from '{js}';await init({{ module_or_path: '{wasm}' }});</script>\n\
         </head>\n<body>\n<p id=\"boot\" class=\"boot\">Loading the dashboard… If nothing appears,\n\
         <a href=\"api/snapshot.html\">open the static snapshot</a>.</p>\n</body>\n</html>\n"
    )
}

fn snapshot_page() -> String {
    let mut page = String::from(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>fleetdash snapshot</title></head><body>\n<table>\n",
    );
    for i in 0..20 {
        page.push_str(&format!(
            "<tr class=\"red\"><td>agent-{i}</td><td>error: connection refused</td><td>ASC 503</td></tr>\n"
        ));
    }
    page.push_str("</table>\n</body></html>\n");
    page
}

/// One HTTP answer, as read off the socket.
pub struct Reply {
    pub status: u16,
    /// Header names lower-cased, in order.
    pub headers: Vec<(String, String)>,
    /// The body after de-chunking (still gzip if the server compressed it).
    pub body: Vec<u8>,
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = String::from_utf8_lossy(&self.body);
        let cut: String = text.chars().take(300).collect();
        f.debug_struct("Reply")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .field("body", &cut)
            .finish()
    }
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as the client sees it: gunzipped or unbrotlied if it came so encoded.
    pub fn decoded_body(&self) -> Vec<u8> {
        match self.header("content-encoding") {
            Some("gzip") => {
                let mut out = Vec::new();
                flate2::read::GzDecoder::new(&self.body[..])
                    .read_to_end(&mut out)
                    .expect("a valid gzip body");
                out
            }
            Some("br") => {
                let mut out = Vec::new();
                brotli_decompressor::Decompressor::new(&self.body[..], 4096)
                    .read_to_end(&mut out)
                    .expect("a valid brotli body");
                out
            }
            None => self.body.clone(),
            Some(other) => panic!("unexpected Content-Encoding {other}"),
        }
    }
}

/// A GET over a fresh HTTP/1.1 connection (`Connection: close`), with optional basic auth and
/// extra headers. Raw on purpose: nothing between the test and the server rewrites anything.
pub fn get(addr: &str, path: &str, auth: Option<(&str, &str)>, headers: &[(&str, &str)]) -> Reply {
    send(addr, "GET", path, auth, headers)
}

/// A `method` request without a body, as [`get`] sends it.
pub fn request(addr: &str, method: &str, path: &str, auth: Option<(&str, &str)>) -> Reply {
    send(addr, method, path, auth, &[])
}

fn send(
    addr: &str,
    method: &str,
    path: &str,
    auth: Option<(&str, &str)>,
    headers: &[(&str, &str)],
) -> Reply {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(support::HANG_BUDGET)).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if let Some((u, p)) = auth {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
        req.push_str(&format!("Authorization: Basic {token}\r\n"));
    }
    for (name, value) in headers {
        req.push_str(&format!("{name}: {value}\r\n"));
    }
    req.push_str("\r\n");
    stream.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    parse_reply(&raw).unwrap_or_else(|| panic!("unparseable reply to {path}: {raw:?}"))
}

/// A GET over a fresh connection from `source` (any address of 127/8: loopback has them all,
/// so one test can play several clients), with `authorization` sent as is when given.
pub fn get_from(source: Ipv4Addr, addr: &str, path: &str, authorization: Option<&str>) -> Reply {
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    socket
        .bind(&SocketAddr::from((source, 0)).into())
        .unwrap_or_else(|e| panic!("cannot bind {source}: {e}"));
    let server: SocketAddr = addr.parse().unwrap();
    socket.connect(&server.into()).unwrap();
    let mut stream: TcpStream = socket.into();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if let Some(value) = authorization {
        req.push_str(&format!("Authorization: {value}\r\n"));
    }
    req.push_str("\r\n");
    stream.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    parse_reply(&raw).unwrap_or_else(|| panic!("unparseable reply to {path}: {raw:?}"))
}

/// An `Authorization` value: `scheme base64(user:pass)`.
pub fn basic(scheme: &str, user: &str, pass: &str) -> String {
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
    format!("{scheme} {token}")
}

pub fn parse_reply(raw: &[u8]) -> Option<Reply> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..split]).ok()?;
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let rest = &raw[split + 4..];
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
    let body = if chunked {
        dechunk(rest)?
    } else {
        rest.to_vec()
    };
    Some(Reply {
        status,
        headers,
        body,
    })
}

fn dechunk(mut raw: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let eol = raw.windows(2).position(|w| w == b"\r\n")?;
        let size_line = std::str::from_utf8(&raw[..eol]).ok()?;
        let size = usize::from_str_radix(size_line.split(';').next()?.trim(), 16).ok()?;
        raw = &raw[eol + 2..];
        if size == 0 {
            return Some(body);
        }
        body.extend_from_slice(raw.get(..size)?);
        raw = raw.get(size + 2..)?;
    }
}

fn ok(addr: &str, path: &str, headers: &[(&str, &str)]) -> Reply {
    let reply = get(addr, path, Some((USER, PASSWORD)), headers);
    assert_eq!(reply.status, 200, "{path} {headers:?}: {reply:?}");
    reply
}

/// Everything a server of the page must do, in one place: auth on every path, only the
/// public files, the right types, caching headers, gzip and revalidation.
pub fn assert_serves_like_production(addr: &str, fx: &Fixture) {
    let (wasm, js, css) = (fx.wasm.as_str(), fx.js.as_str(), fx.css.as_deref());
    let refused = [
        "/api/.tmp-x",
        "/api/secret.txt",
        "/api/",
        "/api/status.json/",
        "/api/%2etmp-x",
        "/api/status.json.lock",
        "/.hidden",
        "/%2ehidden",
        "/secret.txt",
        "/nope",
        "/fleetdash-frontend-0123456789abcdef.js",
    ];
    let mut served = vec![
        "/",
        "/index.html",
        wasm,
        js,
        "/api/status.json",
        "/api/snapshot.html",
    ];
    served.extend(css);

    // 1. No credentials, wrong password, unknown user: 401 with a Basic challenge, on every
    //    path, served or not (a refusal never comes before the password).
    for path in served.iter().chain(&refused) {
        let reply = get(addr, path, None, &[]);
        assert_eq!(reply.status, 401, "{path} without credentials: {reply:?}");
        let challenge = reply.header("www-authenticate").unwrap_or_default();
        assert!(
            challenge.starts_with("Basic realm=\"fleetdash\""),
            "{path}: WWW-Authenticate {challenge:?}"
        );
        let body = String::from_utf8_lossy(&reply.body);
        assert!(!body.contains("schema_version") && !body.contains("not for the web"));
    }
    // Eight failures from one address: below the count after which `fleetdash serve` answers
    // 429 (AuthLimits::DEFAULT.free_failures; nginx never does), so both servers answer 401.
    for path in ["/", wasm, "/api/status.json", "/api/snapshot.html"] {
        for (user, pass) in [(USER, "correct horse battery staple"), ("root", PASSWORD)] {
            let reply = get(addr, path, Some((user, pass)), &[]);
            assert_eq!(reply.status, 401, "{path} as {user}:{pass}: {reply:?}");
            assert!(reply.header("www-authenticate").is_some());
        }
    }

    // 2. The right password: the exact files, with the right types.
    let index = ok(addr, "/", &[]);
    assert_eq!(index.body, fx.root_page());
    assert!(
        index
            .header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    assert_eq!(
        ok(addr, "/index.html", &[]).body,
        fx.dist_file("/index.html")
    );
    let w = ok(addr, wasm, &[]);
    assert_eq!(w.header("content-type"), Some("application/wasm"));
    assert_eq!(w.body, fx.dist_file(wasm));
    let j = ok(addr, js, &[]);
    let js_type = j.header("content-type").unwrap();
    assert!(
        js_type.starts_with("application/javascript") || js_type.starts_with("text/javascript"),
        "{js_type}"
    );
    assert_eq!(j.body, fx.dist_file(js));
    if let Some(css) = css {
        assert!(
            ok(addr, css, &[])
                .header("content-type")
                .unwrap()
                .starts_with("text/css")
        );
    }
    let status = ok(addr, "/api/status.json", &[]);
    assert!(
        status
            .header("content-type")
            .unwrap()
            .starts_with("application/json")
    );
    assert_eq!(status.body, fx.status_json());
    let snapshot = ok(addr, "/api/snapshot.html", &[]);
    assert!(
        snapshot
            .header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    assert_eq!(
        snapshot.body,
        std::fs::read(fx.out.join("snapshot.html")).unwrap()
    );

    // 3. Only the public files: output_dir's other files, dotfiles, unknown paths are refused.
    for path in refused {
        let reply = get(addr, path, Some((USER, PASSWORD)), &[]);
        assert!(
            reply.status == 403 || reply.status == 404,
            "{path} must be refused: {reply:?}"
        );
        let body = String::from_utf8_lossy(&reply.body);
        assert!(
            !body.contains("half-written") && !body.contains("not for the web"),
            "{path} leaked: {body}"
        );
        assert!(!body.contains("dotfile in dist"), "{path} leaked: {body}");
    }

    // 4. Caching: the page and the snapshot revalidate, hashed assets are immutable.
    for path in ["/", "/index.html", "/api/status.json", "/api/snapshot.html"] {
        let reply = ok(addr, path, &[]);
        assert_eq!(reply.header("cache-control"), Some("no-cache"), "{path}");
        assert!(reply.header("etag").is_some(), "{path} has no ETag");
    }
    for path in [wasm, js].into_iter().chain(css) {
        let reply = ok(addr, path, &[]);
        assert_eq!(reply.header("cache-control"), Some(IMMUTABLE), "{path}");
        assert!(reply.header("etag").is_some(), "{path} has no ETag");
    }
    // The page's service worker (issue 46; the real page has one, the fake none): browsers
    // check it on every visit, so it revalidates; JavaScript; behind the login like the rest.
    if fx.dist.join("sw.js").exists() {
        let reply = ok(addr, "/sw.js", &[]);
        assert_eq!(reply.header("cache-control"), Some("no-cache"), "/sw.js");
        assert!(
            reply
                .header("content-type")
                .is_some_and(|t| t.ends_with("/javascript")),
            "/sw.js: {reply:?}"
        );
        assert_eq!(get(addr, "/sw.js", None, &[]).status, 401, "/sw.js");
    }

    // 5. gzip when asked for, never when not; the content is the file's, byte for byte.
    let zipped_paths = [wasm, js, "/", "/api/status.json", "/api/snapshot.html"];
    for path in zipped_paths.into_iter().chain(css) {
        let expected = match path {
            "/" => fx.root_page(),
            "/api/status.json" => fx.status_json(),
            "/api/snapshot.html" => std::fs::read(fx.out.join("snapshot.html")).unwrap(),
            p => fx.dist_file(p),
        };
        let zipped = ok(addr, path, &[("Accept-Encoding", "gzip")]);
        assert_eq!(zipped.header("content-encoding"), Some("gzip"), "{path}");
        assert!(
            zipped
                .header("vary")
                .is_some_and(|v| v.to_ascii_lowercase().contains("accept-encoding")),
            "{path}: {:?}",
            zipped.header("vary")
        );
        assert_eq!(zipped.decoded_body(), expected, "{path}");
        // Another representation than the file: its ETag is weak (compressed on the fly) or
        // the pre-compressed file's own, but never the plain file's strong tag.
        let tag = zipped.header("etag").unwrap_or_default().to_string();
        let plain_tag = ok(addr, path, &[])
            .header("etag")
            .unwrap_or_default()
            .to_string();
        assert!(
            tag.starts_with("W/\"") || (!tag.is_empty() && tag != plain_tag),
            "{path}: gzip answer with ETag {tag:?} (plain: {plain_tag:?})"
        );
        if path == wasm {
            assert!(
                zipped.body.len() < expected.len() / 2,
                "{path} barely shrank"
            );
            assert_eq!(
                zipped.body,
                fx.dist_file(&format!("{wasm}.gz")),
                "{path}: the pre-compressed .gz was not the file served"
            );
        }
        let plain = ok(addr, path, &[]);
        assert_eq!(plain.header("content-encoding"), None, "{path}");
        assert_eq!(plain.body, expected, "{path}");
    }

    // 6. Revalidation: the ETag brings a 304 without a body, gzip or not; another tag a 200.
    for path in ["/", "/api/status.json", "/api/snapshot.html", wasm] {
        for encoding in [None, Some("gzip")] {
            let accept: Vec<(&str, &str)> = encoding
                .map(|e| ("Accept-Encoding", e))
                .into_iter()
                .collect();
            let first = ok(addr, path, &accept);
            let etag = first.header("etag").unwrap().to_string();
            let mut conditional = accept.clone();
            conditional.push(("If-None-Match", &etag));
            let again = get(addr, path, Some((USER, PASSWORD)), &conditional);
            assert_eq!(
                again.status, 304,
                "{path} {encoding:?} If-None-Match {etag}: {again:?}"
            );
            assert!(again.body.is_empty(), "{path}: a 304 has no body");
            assert!(again.header("etag").is_some(), "{path}: 304 without ETag");
            let expected_cache = if path == wasm { IMMUTABLE } else { "no-cache" };
            assert_eq!(
                again.header("cache-control"),
                Some(expected_cache),
                "{path} 304"
            );
            let other = get(
                addr,
                path,
                Some((USER, PASSWORD)),
                &[("If-None-Match", "\"0-0\"")],
            );
            assert_eq!(other.status, 200, "{path} with a foreign ETag");
        }
    }

    // 7. A new snapshot gets a new ETag: a revalidating browser sees it at once. (nginx's ETag
    //    is the mtime in seconds and the size: wait for the next second first.)
    let before = ok(addr, "/api/status.json", &[]);
    let old_tag = before.header("etag").unwrap().to_string();
    std::thread::sleep(Duration::from_millis(1100));
    fx.collect_again();
    let after = get(
        addr,
        "/api/status.json",
        Some((USER, PASSWORD)),
        &[("If-None-Match", &old_tag)],
    );
    assert_eq!(
        after.status, 200,
        "a rewritten status.json must not be a 304"
    );
    assert_eq!(after.body, fx.status_json());
    assert_ne!(after.header("etag"), Some(old_tag.as_str()));
}

/// Issue 46: `/` answers the first HTML the collector wrote with the last snapshot (the page's
/// index.html with the verdict in it), revalidated like the snapshot: a new write is a new
/// answer at once. `/index.html` stays the page itself. Without a first HTML, `/` is the page's
/// own index.html again. Leaves output_dir without its first HTML.
pub fn assert_serves_the_first_html(addr: &str, fx: &Fixture) {
    let first = fx
        .first_html()
        .expect("the collector wrote a first HTML of this page");
    let text = String::from_utf8_lossy(&first).to_string();
    assert!(
        text.contains("<header class=\"top\" id=\"first\""),
        "{text}"
    );
    let root = ok(addr, "/", &[]);
    assert_eq!(root.body, first);
    assert!(
        root.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    assert_eq!(
        ok(addr, "/index.html", &[]).body,
        fx.dist_file("/index.html")
    );

    let old_tag = root.header("etag").unwrap().to_string();
    std::thread::sleep(Duration::from_millis(1100));
    fx.collect_again();
    let again = get(
        addr,
        "/",
        Some((USER, PASSWORD)),
        &[("If-None-Match", &old_tag)],
    );
    assert_eq!(
        again.status, 200,
        "a first HTML written again must not be a 304: {again:?}"
    );
    assert_eq!(again.body, fx.first_html().unwrap());
    assert_ne!(again.body, first, "each write stamps its snapshot's time");

    std::fs::remove_file(fx.out.join("index.html")).unwrap();
    assert_eq!(ok(addr, "/", &[]).body, fx.dist_file("/index.html"));
}

/// Issue 35: which copy of each page file a server answers to which Accept-Encoding, when the
/// page ships a `.br` and a `.gz` beside each file (`page/`, `fleetdash page export`). With
/// `brotli`, the `.br` to a client that takes br (weights respected: `br;q=0` is a no), else
/// the `.gz` to one that takes gzip, else the file; without (nginx lacking the brotli module),
/// never br. Every answer of a page file carries `Vary: Accept-Encoding`, a Content-Length that
/// is its body's, and a tag of its own representation, which revalidates to a 304 under the
/// same Accept-Encoding. Each body is the pre-compressed file byte for byte, and decodes to the
/// file byte for byte.
pub fn assert_negotiates_brotli_and_gzip(addr: &str, fx: &Fixture, brotli: bool) {
    let best = if brotli { Some("br") } else { Some("gzip") };
    let br_or_nothing = if brotli { Some("br") } else { None };
    let cases: [(Option<&str>, Option<&str>); 10] = [
        (Some("br"), br_or_nothing),
        (Some("gzip, deflate, br"), best),
        (Some("br, gzip"), best),
        (Some("gzip"), Some("gzip")),
        (Some("br;q=0, gzip"), Some("gzip")),
        (Some("gzip;q=1, br;q=0"), Some("gzip")),
        (Some("br;q=0"), None),
        (Some("identity"), None),
        (Some("deflate"), None),
        (None, None),
    ];
    // `/` is the first HTML where the collector wrote one of this page (compressed on the fly,
    // as status.json is: assert_serves_like_production checks it), else the page's index.html.
    let root = fx
        .first_html()
        .is_none()
        .then_some(("/", "/index.html".to_string()));
    for (path, file) in root.into_iter().chain(
        [
            ("/index.html", "/index.html".to_string()),
            (fx.wasm.as_str(), fx.wasm.clone()),
            (fx.js.as_str(), fx.js.clone()),
            ("/manifest.webmanifest", "/manifest.webmanifest".to_string()),
        ]
        .into_iter()
        .chain(fx.css.as_deref().map(|c| (c, c.to_string()))),
    ) {
        let raw = fx.dist_file(&file);
        let mut tags: std::collections::BTreeMap<Option<&str>, String> = Default::default();
        for (accept, coding) in cases {
            let headers: Vec<(&str, &str)> =
                accept.map(|a| ("Accept-Encoding", a)).into_iter().collect();
            let reply = ok(addr, path, &headers);
            let what = format!("{path} with Accept-Encoding {accept:?}");
            assert_eq!(
                reply.header("content-encoding"),
                coding,
                "{what}: {reply:?}"
            );
            assert!(
                reply
                    .header("vary")
                    .is_some_and(|v| v.to_ascii_lowercase().contains("accept-encoding")),
                "{what}: Vary {:?}",
                reply.header("vary")
            );
            assert_eq!(
                reply.header("content-length"),
                Some(reply.body.len().to_string().as_str()),
                "{what}: Content-Length"
            );
            assert_eq!(reply.decoded_body(), raw, "{what}: decodes to the file");
            let copy = match coding {
                Some("br") => fx.dist_file(&format!("{file}.br")),
                Some("gzip") => fx.dist_file(&format!("{file}.gz")),
                _ => raw.clone(),
            };
            assert_eq!(
                reply.body, copy,
                "{what}: the pre-compressed file, as it is"
            );
            let tag = reply.header("etag").expect("an ETag").to_string();
            if let Some(seen) = tags.get(&coding) {
                assert_eq!(*seen, tag, "{what}: one tag per representation");
            } else {
                tags.insert(coding, tag.clone());
                // The tag revalidates under the same Accept-Encoding.
                let mut conditional = headers.clone();
                conditional.push(("If-None-Match", &tag));
                let again = get(addr, path, Some((USER, PASSWORD)), &conditional);
                assert_eq!(again.status, 304, "{what} If-None-Match {tag}: {again:?}");
            }
        }
        let distinct: std::collections::BTreeSet<&String> = tags.values().collect();
        assert_eq!(
            distinct.len(),
            tags.len(),
            "{path}: each representation its own ETag: {tags:?}"
        );
        assert_eq!(tags.len(), if brotli { 3 } else { 2 }, "{path}: {tags:?}");
    }
}

/// Issue 46: the page's web app manifest and the icons it names, as a phone's browser fetches
/// them to install the page: behind the password like everything else, the manifest as
/// `application/manifest+json` revalidated like index.html (`no-cache`, ETag, 304), each icon
/// an `image/png` of the size the manifest says, kept a day ([`ICON_CACHE`], on its 304 too),
/// every body the page's file byte for byte. For a page with a manifest (the built one:
/// [`Page::Embedded`], [`Page::Exported`]). Returns the manifest.
pub fn assert_serves_the_app_manifest(addr: &str, fx: &Fixture) -> serde_json::Value {
    const MANIFEST: &str = "/manifest.webmanifest";
    let manifest = ok(addr, MANIFEST, &[]);
    assert_eq!(
        manifest.header("content-type"),
        Some("application/manifest+json"),
        "{manifest:?}"
    );
    assert_eq!(manifest.body, fx.dist_file(MANIFEST));
    let parsed: serde_json::Value = serde_json::from_slice(&manifest.body).unwrap();
    let icons: Vec<(String, String, String)> = parsed["icons"]
        .as_array()
        .expect("the manifest names icons")
        .iter()
        .map(|i| {
            let field = |k: &str| i[k].as_str().unwrap_or_default().to_string();
            (
                format!("/{}", field("src")),
                field("sizes"),
                field("purpose"),
            )
        })
        .collect();
    let purposes: Vec<(&str, &str)> = icons
        .iter()
        .map(|(_, sizes, purpose)| (sizes.as_str(), purpose.as_str()))
        .collect();
    assert_eq!(
        purposes,
        [
            ("192x192", "any"),
            ("512x512", "any"),
            ("512x512", "maskable")
        ],
        "{parsed}"
    );
    let mut revalidated = vec![(MANIFEST.to_string(), "no-cache")];
    for (path, sizes, _) in &icons {
        let icon = ok(addr, path, &[]);
        assert_eq!(icon.header("content-type"), Some("image/png"), "{path}");
        assert_eq!(icon.header("cache-control"), Some(ICON_CACHE), "{path}");
        assert_eq!(icon.body, fx.dist_file(path), "{path}");
        // The PNG's own width and height (its IHDR) are what the manifest says.
        let side = |at: usize| u32::from_be_bytes(icon.body[at..at + 4].try_into().unwrap());
        assert!(
            icon.body.starts_with(b"\x89PNG\r\n\x1a\n"),
            "{path} is no PNG"
        );
        assert_eq!(format!("{}x{}", side(16), side(20)), *sizes, "{path}");
        revalidated.push((path.clone(), ICON_CACHE));
    }
    for (path, cache) in revalidated {
        let first = ok(addr, &path, &[]);
        assert_eq!(first.header("cache-control"), Some(cache), "{path}");
        let etag = first.header("etag").expect("an ETag").to_string();
        let again = get(
            addr,
            &path,
            Some((USER, PASSWORD)),
            &[("If-None-Match", &etag)],
        );
        assert_eq!(again.status, 304, "{path} If-None-Match {etag}: {again:?}");
        assert_eq!(again.header("cache-control"), Some(cache), "{path} 304");
        // Without the password: the challenge, and nothing of the file.
        let refused = get(addr, &path, None, &[]);
        assert_eq!(
            refused.status, 401,
            "{path} without credentials: {refused:?}"
        );
        assert!(
            refused
                .header("www-authenticate")
                .is_some_and(|c| c.starts_with("Basic realm=\"fleetdash\"")),
            "{path}: {refused:?}"
        );
    }
    parsed
}

/// The inline scripts of a page (`<script>` elements without `src`), as the browser hashes
/// them for a Content-Security-Policy: the exact text between the tags.
pub fn inline_scripts(html: &str) -> Vec<&str> {
    let mut scripts = Vec::new();
    let mut rest = html;
    while let Some(open) = rest.find("<script") {
        let after = &rest[open..];
        let Some(tag_end) = after.find('>') else {
            break;
        };
        let tag = &after[..tag_end];
        let body = &after[tag_end + 1..];
        let Some(close) = body.find("</script>") else {
            break;
        };
        if !tag.contains(" src=") {
            scripts.push(&body[..close]);
        }
        rest = &body[close..];
    }
    scripts
}

/// A CSP source for `script`'s text: `'sha256-<base64 of its SHA-256>'`.
pub fn sha256_source(script: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, script.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
    )
}

/// A Content-Security-Policy header, directive by directive (name, then its sources).
pub fn directives(policy: &str) -> Vec<(String, Vec<String>)> {
    policy
        .split(';')
        .filter_map(|d| {
            let mut words = d.split_whitespace();
            let name = words.next()?.to_ascii_lowercase();
            Some((name, words.map(str::to_string).collect()))
        })
        .collect()
}

/// The headers that guard the page (issue 32), on every answer a browser may get, whatever its
/// status: the 401 before the login, the page, its assets, the snapshot, a 304, a 404. The
/// policy lets the page run (its inline module script by hash, its wasm by
/// `'wasm-unsafe-eval'`, its fetches to itself) and nothing else: no inline script unhashed, no
/// eval, no framing. Plain HTTP carries no Strict-Transport-Security. Returns the policy.
pub fn assert_sends_the_pages_security_headers(addr: &str, fx: &Fixture) -> String {
    let index = String::from_utf8(fx.dist_file("/index.html")).unwrap();
    let scripts = inline_scripts(&index);
    assert!(
        !scripts.is_empty(),
        "the page starts its wasm from an inline module script"
    );
    let etag = ok(addr, "/api/status.json", &[])
        .header("etag")
        .unwrap()
        .to_string();
    let answers = [
        ("401", get(addr, "/", None, &[])),
        ("401 asset", get(addr, &fx.wasm, None, &[])),
        ("page", get(addr, "/", Some((USER, PASSWORD)), &[])),
        (
            "index.html",
            get(addr, "/index.html", Some((USER, PASSWORD)), &[]),
        ),
        (
            "gzip page",
            get(
                addr,
                "/",
                Some((USER, PASSWORD)),
                &[("Accept-Encoding", "gzip")],
            ),
        ),
        ("wasm", get(addr, &fx.wasm, Some((USER, PASSWORD)), &[])),
        ("js", get(addr, &fx.js, Some((USER, PASSWORD)), &[])),
        // The page's stylesheet, or its JS again where the stylesheet is inline.
        (
            "css",
            get(
                addr,
                fx.css.as_ref().unwrap_or(&fx.js),
                Some((USER, PASSWORD)),
                &[],
            ),
        ),
        (
            "status.json",
            get(addr, "/api/status.json", Some((USER, PASSWORD)), &[]),
        ),
        (
            "snapshot.html",
            get(addr, "/api/snapshot.html", Some((USER, PASSWORD)), &[]),
        ),
        (
            "304",
            get(
                addr,
                "/api/status.json",
                Some((USER, PASSWORD)),
                &[("If-None-Match", &etag)],
            ),
        ),
        ("404", get(addr, "/nope", Some((USER, PASSWORD)), &[])),
    ];
    let policy = answers[2]
        .1
        .header("content-security-policy")
        .map(str::to_string);
    let Some(policy) = policy else {
        panic!(
            "the page has no Content-Security-Policy: {:?}",
            answers[2].1
        );
    };
    for (what, reply) in &answers {
        assert_eq!(
            reply.header("content-security-policy"),
            Some(policy.as_str()),
            "{what}: the same policy on every answer: {reply:?}"
        );
        assert_eq!(
            reply.header("x-content-type-options"),
            Some("nosniff"),
            "{what}: {reply:?}"
        );
        assert_eq!(
            reply.header("referrer-policy"),
            Some("no-referrer"),
            "{what}: {reply:?}"
        );
        assert_eq!(
            reply.header("strict-transport-security"),
            None,
            "{what}: HSTS over plain HTTP means nothing and pins nothing: {reply:?}"
        );
    }
    let parsed = directives(&policy);
    let sources = |name: &str| -> Vec<String> {
        let found: Vec<&Vec<String>> = parsed
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, s)| s)
            .collect();
        assert_eq!(found.len(), 1, "one {name} in {policy}");
        found[0].clone()
    };
    assert_eq!(sources("default-src"), ["'none'"], "{policy}");
    assert_eq!(sources("frame-ancestors"), ["'none'"], "{policy}");
    assert_eq!(sources("base-uri"), ["'none'"], "{policy}");
    assert_eq!(sources("form-action"), ["'none'"], "{policy}");
    let script_src = sources("script-src");
    for needed in ["'self'".to_string(), "'wasm-unsafe-eval'".to_string()]
        .into_iter()
        .chain(scripts.iter().map(|s| sha256_source(s)))
    {
        assert!(
            script_src.contains(&needed),
            "script-src lacks {needed}: {policy}"
        );
    }
    for never in [
        "'unsafe-inline'",
        "'unsafe-eval'",
        "*",
        "data:",
        "http:",
        "https:",
    ] {
        assert!(
            !script_src.iter().any(|s| s == never),
            "script-src allows {never}: {policy}"
        );
    }
    assert_eq!(
        script_src.len(),
        2 + scripts.len(),
        "script-src is 'self', the wasm and the page's own scripts: {policy}"
    );
    assert_eq!(sources("connect-src"), ["'self'"], "{policy}");
    // Issue 46: the web app manifest and its icons are the page's own (default-src is 'none').
    assert_eq!(sources("manifest-src"), ["'self'"], "{policy}");
    assert!(
        sources("img-src").contains(&"'self'".to_string()),
        "{policy}"
    );
    policy
}

/// The real nginx, running the repository's server block (placeholders substituted) inside the
/// test wrapper, from its own prefix directory. `kill -QUIT` on drop.
pub struct Nginx {
    pub addr: String,
    child: Child,
    prefix: tempfile::TempDir,
}

pub const NGINX: &str = "/usr/sbin/nginx";

/// Where the production block includes its optional snippets from (nginx/brotli.conf on a
/// host with the brotli module); a test's nginx reads its own prefix's folder instead.
pub const SNIPPETS: &str = "/etc/nginx/fleetdash.d/";

/// Debian's libnginx-mod-http-brotli-static (scripts/test installs it).
pub const BROTLI_MODULE: &str = "/usr/lib/nginx/modules/ngx_http_brotli_static_module.so";

impl Nginx {
    /// nginx as Debian's package has it without the brotli module: nothing in the snippets'
    /// folder, no module loaded. gzip only.
    pub fn start(fx: &Fixture) -> Nginx {
        Nginx::start_with(fx, false)
    }

    /// With `brotli`, nginx with Debian's brotli_static module loaded and nginx/brotli.conf in
    /// the snippets' folder, as docs/install.md installs it where the module is.
    pub fn start_with(fx: &Fixture, brotli: bool) -> Nginx {
        assert!(
            Path::new(NGINX).exists(),
            "{NGINX} is missing: nginx is not installed. Run scripts/test, which installs it \
             (apt-get install nginx), or install the Debian package yourself"
        );
        let prefix = tempfile::tempdir().unwrap();
        std::fs::set_permissions(prefix.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir(prefix.path().join("temp")).unwrap();
        for dir in ["modules", "fleetdash.d"] {
            std::fs::create_dir(prefix.path().join(dir)).unwrap();
        }
        if brotli {
            assert!(
                Path::new(BROTLI_MODULE).exists(),
                "{BROTLI_MODULE} is missing: run scripts/test, which installs it (apt-get install \
                 libnginx-mod-http-brotli-static), or install the Debian package yourself"
            );
            std::fs::write(
                prefix.path().join("modules/brotli.conf"),
                format!("load_module {BROTLI_MODULE};\n"),
            )
            .unwrap();
            std::fs::copy(
                support::repo_root().join("nginx/brotli.conf"),
                prefix.path().join("fleetdash.d/brotli.conf"),
            )
            .unwrap();
        }
        let mut last_error = String::new();
        // A port is picked free and handed over; another process may take it in between.
        for _ in 0..5 {
            let port = free_port();
            let addr = format!("127.0.0.1:{port}");
            write_nginx_conf(prefix.path(), fx, &addr);
            let p = prefix.path();
            let mut child = Command::new(NGINX)
                .arg("-p")
                .arg(format!("{}/", p.display()))
                .arg("-c")
                .arg(p.join("nginx.conf"))
                .arg("-e")
                .arg(p.join("error.log"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let deadline = Instant::now() + support::HANG_BUDGET;
            loop {
                if let Some(status) = child.try_wait().unwrap() {
                    let mut stderr = String::new();
                    child
                        .stderr
                        .take()
                        .unwrap()
                        .read_to_string(&mut stderr)
                        .unwrap();
                    let log = std::fs::read_to_string(p.join("error.log")).unwrap_or_default();
                    last_error = format!("nginx exited with {status}: {stderr}{log}");
                    break;
                }
                // Ours, not another test's nginx on a port both picked: the master writes its
                // pid file only once it holds its listening socket.
                if p.join("nginx.pid").exists() && TcpStream::connect(&addr).is_ok() {
                    return Nginx {
                        addr,
                        child,
                        prefix,
                    };
                }
                assert!(Instant::now() < deadline, "nginx did not listen on {addr}");
                std::thread::sleep(Duration::from_millis(20));
            }
            if !last_error.contains("Address already in use") {
                break;
            }
        }
        panic!("{last_error}");
    }

    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.prefix.path().join("error.log")).unwrap_or_default()
    }
}

/// The production block with its five placeholders substituted (as nginx/README.md's sed line
/// does), wrapped by nginx/test-wrapper.conf.
fn write_nginx_conf(prefix: &Path, fx: &Fixture, listen: &str) {
    let server = std::fs::read_to_string(support::repo_root().join("nginx/fleetdash.conf"))
        .unwrap()
        .replace("{{LISTEN}}", listen)
        .replace("{{DIST_DIR}}", &fx.dist.display().to_string())
        .replace("{{OUTPUT_DIR}}", &fx.out.display().to_string())
        .replace("{{HTPASSWD}}", &fx.htpasswd.display().to_string())
        .replace("{{INTAKE}}", &fx.intake);
    assert!(!server.contains("{{"), "a placeholder is left:\n{server}");
    let include = format!("include {SNIPPETS}*.conf;");
    assert!(server.contains(&include), "the block has no `{include}`");
    let server = server.replace(SNIPPETS, &format!("{}/fleetdash.d/", prefix.display()));
    let server_conf = prefix.join("fleetdash.conf");
    std::fs::write(&server_conf, server).unwrap();
    let main = std::fs::read_to_string(support::repo_root().join("nginx/test-wrapper.conf"))
        .unwrap()
        .replace("{{PREFIX}}", &format!("{}/", prefix.display()))
        .replace("{{SERVER_CONF}}", &server_conf.display().to_string());
    assert!(!main.contains("{{"), "a placeholder is left:\n{main}");
    std::fs::write(prefix.join("nginx.conf"), main).unwrap();
}

impl Drop for Nginx {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("nginx error.log:\n{}", self.error_log());
        }
        // Graceful: the master lets the workers finish and removes its pid file.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGQUIT);
        }
        let deadline = Instant::now() + support::HANG_BUDGET;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The real `fleetdash serve` binary on the fixture's config. SIGTERM on drop.
pub struct FleetdashServe {
    pub addr: String,
    child: Child,
}

impl FleetdashServe {
    pub fn start(fx: &Fixture) -> FleetdashServe {
        let mut child = support::fleetdash()
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(&fx.config)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
        let addr = line
            .trim()
            .strip_prefix("fleetdash: serving on http://")
            .and_then(|s| s.strip_suffix('/'))
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        FleetdashServe { addr, child }
    }
}

impl Drop for FleetdashServe {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

/// SIGTERM, as systemd stops a service; SIGKILL if it has not exited within the hang budget.
pub fn stop(child: &mut std::process::Child) {
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let deadline = Instant::now() + support::HANG_BUDGET;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}
