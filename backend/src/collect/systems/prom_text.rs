//! A small parser for the Prometheus text exposition format (0.0.4), the format node_exporter's
//! `/metrics` speaks, and [`render_sample`], its inverse for one sample.
//!
//! It owns the syntax only: `# HELP`/`# TYPE`/comment lines, and samples written as
//! `name{label="value",...} value [timestamp_ms]`, with label values escaped by `\\`, `\"` and
//! `\n`, and values that may be `+Inf`, `-Inf` or `NaN`. A line that is none of these is skipped
//! and counted, never fatal: one bad line from a textfile must not hide the RAM.

use std::fmt::Write as _;

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    /// In the order written.
    pub labels: Vec<(String, String)>,
    pub value: f64,
    /// Milliseconds since the Unix epoch, when the line carried one.
    pub timestamp_ms: Option<i64>,
}

impl Sample {
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A line that could not be parsed: where, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// 1-based.
    pub line: usize,
    pub message: String,
}

/// Everything one exposition held.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exposition {
    pub samples: Vec<Sample>,
    /// Lines that were neither blank, comments nor samples (skipped).
    pub unparseable: usize,
    /// The first of them, to name in a reason.
    pub first_error: Option<LineError>,
}

impl Exposition {
    /// Whether any sample of this metric is present, whatever its labels.
    pub fn has(&self, name: &str) -> bool {
        self.samples.iter().any(|s| s.name == name)
    }

    /// The samples of `name` carrying every label of `labels` with that exact value.
    pub fn matching<'a>(
        &'a self,
        name: &'a str,
        labels: &'a [(&'a str, &'a str)],
    ) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples
            .iter()
            .filter(move |s| s.name == name && labels.iter().all(|(k, v)| s.label(k) == Some(*v)))
    }

    /// "3 unparseable lines (line 1: ...)", or `None` when every line parsed.
    pub fn unparseable_note(&self) -> Option<String> {
        let first = self.first_error.as_ref()?;
        let plural = if self.unparseable == 1 { "" } else { "s" };
        Some(format!(
            "{} unparseable line{plural} (line {}: {})",
            self.unparseable, first.line, first.message
        ))
    }
}

/// Parses a whole exposition. Never fails: bad lines are counted in [`Exposition::unparseable`].
pub fn parse(text: &str) -> Exposition {
    let mut out = Exposition::default();
    for (i, raw) in text.split('\n').enumerate() {
        let line = raw.trim_matches([' ', '\t', '\r']);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match parse_sample(line) {
            Ok(sample) => out.samples.push(sample),
            Err(message) => {
                out.unparseable += 1;
                if out.first_error.is_none() {
                    out.first_error = Some(LineError {
                        line: i + 1,
                        message,
                    });
                }
            }
        }
    }
    out
}

/// One sample line as Prometheus writes it, label values escaped; `+Inf`, `-Inf`, `NaN` spelled
/// the way the format wants them.
pub fn render_sample(name: &str, labels: &[(&str, &str)], value: f64) -> String {
    let mut s = String::from(name);
    if !labels.is_empty() {
        s.push('{');
        for (i, (k, v)) in labels.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str(k);
            s.push_str("=\"");
            for c in v.chars() {
                match c {
                    '\\' => s.push_str("\\\\"),
                    '"' => s.push_str("\\\""),
                    '\n' => s.push_str("\\n"),
                    c => s.push(c),
                }
            }
            s.push('"');
        }
        s.push('}');
    }
    s.push(' ');
    if value.is_nan() {
        s.push_str("NaN");
    } else if value == f64::INFINITY {
        s.push_str("+Inf");
    } else if value == f64::NEG_INFINITY {
        s.push_str("-Inf");
    } else {
        // Rust's shortest round-trip form; whole numbers print without a fraction.
        let _ = write!(s, "{value}");
    }
    s
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

struct Cursor<'a> {
    rest: &'a str,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<char> {
        self.rest.chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.rest = &self.rest[c.len_utf8()..];
        Some(c)
    }

    fn eat(&mut self, want: char) -> bool {
        if self.peek() == Some(want) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn skip_blanks(&mut self) {
        self.rest = self.rest.trim_start_matches([' ', '\t']);
    }

    /// A run of name characters whose first is a valid start (`allow_colon` for metric names).
    fn name(&mut self, allow_colon: bool, what: &str) -> Result<&'a str, String> {
        let ok_start = |c: char| is_name_start(c) && (allow_colon || c != ':');
        let ok_rest = |c: char| is_name_char(c) && (allow_colon || c != ':');
        match self.peek() {
            Some(c) if ok_start(c) => {}
            Some(c) => return Err(format!("expected a {what}, found {c:?}")),
            None => return Err(format!("expected a {what}, found the end of the line")),
        }
        let end = self
            .rest
            .char_indices()
            .find(|&(_, c)| !ok_rest(c))
            .map_or(self.rest.len(), |(i, _)| i);
        let (name, rest) = self.rest.split_at(end);
        self.rest = rest;
        Ok(name)
    }

    /// A double-quoted label value with the format's three escapes.
    fn quoted(&mut self) -> Result<String, String> {
        if !self.eat('"') {
            return Err("expected a quoted label value".into());
        }
        let mut value = String::new();
        loop {
            match self.bump() {
                None => return Err("unterminated label value".into()),
                Some('"') => return Ok(value),
                Some('\\') => match self.bump() {
                    Some('\\') => value.push('\\'),
                    Some('"') => value.push('"'),
                    Some('n') => value.push('\n'),
                    Some(c) => return Err(format!("invalid escape \\{c} in a label value")),
                    None => return Err("unterminated label value".into()),
                },
                Some(c) => value.push(c),
            }
        }
    }
}

fn parse_sample(line: &str) -> Result<Sample, String> {
    let mut cur = Cursor { rest: line };
    let name = cur.name(true, "metric name")?.to_string();
    let mut labels: Vec<(String, String)> = Vec::new();
    match cur.peek() {
        Some('{') => {
            cur.bump();
            loop {
                cur.skip_blanks();
                if cur.eat('}') {
                    break;
                }
                let key = cur.name(false, "label name")?.to_string();
                cur.skip_blanks();
                if !cur.eat('=') {
                    return Err(format!("expected '=' after label {key}"));
                }
                cur.skip_blanks();
                let value = cur.quoted()?;
                if labels.iter().any(|(k, _)| *k == key) {
                    return Err(format!("label {key} given twice"));
                }
                labels.push((key, value));
                cur.skip_blanks();
                if cur.eat(',') {
                    continue;
                }
                if !cur.eat('}') {
                    return Err("expected ',' or '}' after a label".into());
                }
                break;
            }
        }
        Some(' ' | '\t') => {}
        Some(c) => return Err(format!("unexpected {c:?} after the metric name")),
        None => return Err(format!("{name} has no value")),
    }
    let mut fields = cur.rest.split_ascii_whitespace();
    let value = fields
        .next()
        .ok_or_else(|| format!("{name} has no value"))?;
    let value = parse_value(value).ok_or_else(|| format!("{name}: {value:?} is not a number"))?;
    let timestamp_ms = match fields.next() {
        None => None,
        Some(t) => Some(
            t.parse::<i64>()
                .map_err(|_| format!("{name}: {t:?} is not a timestamp in milliseconds"))?,
        ),
    };
    if fields.next().is_some() {
        return Err(format!("{name}: unexpected text after the value"));
    }
    Ok(Sample {
        name,
        labels,
        value,
        timestamp_ms,
    })
}

/// A value as Go's `strconv.ParseFloat` writes it. Rust's parser takes the same decimal and
/// exponent forms and the same spellings of infinity and NaN (any case, optional sign); only Go's
/// hexadecimal floats are refused, and no exporter writes those.
fn parse_value(s: &str) -> Option<f64> {
    s.parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_node_exporter_shapes() {
        let text = "# HELP node_memory_MemTotal_bytes Memory information field MemTotal_bytes.\n\
                    # TYPE node_memory_MemTotal_bytes gauge\n\
                    node_memory_MemTotal_bytes 2.5276502016e+10\n\
                    node_filesystem_avail_bytes{device=\"/dev/vda\",fstype=\"ext4\",mountpoint=\"/\"} 8.2556424192e+10\n\
                    \n\
                    http_requests_total{method=\"post\",code=\"200\",} 1027 1395066363000\n\
                    # a plain comment\n\
                    metric_without_timestamp_and_labels 12.47\n\
                    something_weird{problem=\"division by zero\"} +Inf -3982045\n\
                    neg_inf -Inf\n\
                    not_a_number NaN\r\n";
        let e = parse(text);
        assert_eq!(e.unparseable, 0, "{:?}", e.first_error);
        assert_eq!(e.samples.len(), 7);
        assert_eq!(e.samples[0].value, 25_276_502_016.0);
        let fs = e
            .matching("node_filesystem_avail_bytes", &[("mountpoint", "/")])
            .next()
            .unwrap();
        assert_eq!(fs.label("fstype"), Some("ext4"));
        assert_eq!(fs.value, 82_556_424_192.0);
        let h = &e.samples[2];
        assert_eq!(h.labels.len(), 2, "a trailing comma is allowed");
        assert_eq!(h.timestamp_ms, Some(1_395_066_363_000));
        assert_eq!(e.samples[4].value, f64::INFINITY);
        assert_eq!(e.samples[4].timestamp_ms, Some(-3_982_045));
        assert_eq!(e.samples[5].value, f64::NEG_INFINITY);
        assert!(e.samples[6].value.is_nan());
        assert!(e.has("neg_inf"));
        assert!(!e.has("neg"));
    }

    #[test]
    fn label_values_unescape() {
        let e = parse(
            r#"msdos_file_access_time_seconds{path="C:\\DIR\\FILE.TXT",error="Cannot find file:\n\"FILE.TXT\""} 1.458255915e9"#,
        );
        assert_eq!(e.unparseable, 0, "{:?}", e.first_error);
        let s = &e.samples[0];
        assert_eq!(s.label("path"), Some(r"C:\DIR\FILE.TXT"));
        assert_eq!(s.label("error"), Some("Cannot find file:\n\"FILE.TXT\""));
        // Braces, commas and '=' inside a quoted value are data.
        let e = parse(r#"m{a="x}y,z=\"w\"",b="ü"} 1"#);
        assert_eq!(e.samples[0].label("a"), Some(r#"x}y,z="w""#));
        assert_eq!(e.samples[0].label("b"), Some("ü"));
    }

    #[test]
    fn bad_lines_are_counted_not_fatal() {
        let text = "good 1\n\
                    this is not prometheus\n\
                    {{{\n\
                    m{a=\"unterminated} 1\n\
                    m{a=\"x\" 1\n\
                    m{a=\"\\t\"} 1\n\
                    m{a=\"x\",a=\"y\"} 1\n\
                    m{0a=\"x\"} 1\n\
                    m one\n\
                    m 1 2 3\n\
                    m 1 1.5\n\
                    novalue\n\
                    m-dash 1\n\
                    also_good{x=\"1\"} 2\n";
        let e = parse(text);
        assert_eq!(e.samples.len(), 2);
        assert_eq!(e.unparseable, 12);
        let first = e.first_error.clone().unwrap();
        assert_eq!(first.line, 2);
        assert!(
            e.unparseable_note()
                .unwrap()
                .starts_with("12 unparseable lines (line 2:"),
            "{:?}",
            e.unparseable_note()
        );
        assert_eq!(parse("").samples.len(), 0);
        assert_eq!(parse("").unparseable_note(), None);
        // Binary junk does not panic.
        let junk = String::from_utf8_lossy(&[0xff, 0xfe, b'{', 0, b'"', 0x80, b'\n', b'}']);
        assert_eq!(parse(&junk).samples.len(), 0);
    }

    #[test]
    fn render_round_trips() {
        let labels = [("cron", "back\\up \"nightly\"\nx"), ("host", "lab")];
        for value in [
            0.0,
            1_764_000_000.0,
            -2.5,
            1e-9,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            let line = render_sample(
                "fleetdash_cron_last_start_timestamp_seconds",
                &labels,
                value,
            );
            let e = parse(&line);
            assert_eq!(e.unparseable, 0, "{line}: {:?}", e.first_error);
            let s = &e.samples[0];
            assert_eq!(s.value, value, "{line}");
            assert_eq!(s.label("cron"), Some(labels[0].1));
            assert_eq!(s.label("host"), Some("lab"));
        }
        assert_eq!(render_sample("up", &[], 1.0), "up 1");
        assert_eq!(render_sample("x", &[], f64::INFINITY), "x +Inf");
        assert!(
            parse(&render_sample("x", &[], f64::NAN)).samples[0]
                .value
                .is_nan()
        );
    }
}
