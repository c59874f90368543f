//! `web_fetch`: an HTTP(S) GET turned into readable text, bounded. It reaches the
//! network, so the runner asks before it runs unless a rule allows it.

use std::io::Read;
use std::time::Duration;

use magi_protocol::limits::{WEB_FETCH_BYTES, WEB_FETCH_TEXT_BYTES, WEB_FETCH_TIMEOUT_MS};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::facts::{FACT_STRING_BYTES, Facts, cut as fact_cut};
use crate::{ToolDefinition, ToolOutput, ToolReport};

/// Redirects followed before giving up.
const MAX_REDIRECTS: u32 = 5;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Arguments {
    url: String,
}

pub(crate) fn definition() -> ToolDefinition {
    ToolDefinition {
        name: crate::BuiltinTool::WebFetch.name(),
        description: "Fetch an http:// or https:// URL and return its text (HTML is turned \
                      into readable text), at most 64 KiB of it.",
        parameters: json!({
            "type": "object",
            "properties": {"url": {"type": "string", "description": "The URL to fetch."}},
            "required": ["url"],
            "additionalProperties": false
        }),
    }
}

pub(crate) fn run(arguments: &Value) -> ToolReport {
    let args = match Arguments::deserialize(arguments) {
        Ok(args) => args,
        Err(e) => {
            return ToolOutput::failed(
                "invalid arguments",
                format!("Expected {{\"url\": string}}: {e}."),
            )
            .into();
        }
    };
    // What the call has seen so far; each step fills in more before it can fail.
    let mut seen = Seen::default();
    let output = fetch(&args.url, &mut seen);
    ToolReport::with_facts(
        output,
        Facts::Web {
            url: fact_cut(&args.url, FACT_STRING_BYTES),
            status: seen.status,
            content_type: seen.content_type,
            bytes: seen.bytes,
            truncated: seen.truncated,
        },
    )
}

/// What a fetch observed of the response, for its facts.
#[derive(Default)]
struct Seen {
    status: Option<u16>,
    content_type: Option<String>,
    bytes: Option<u64>,
    truncated: bool,
}

/// Fetches `url` as text for the model, noting in `seen` what the response showed.
fn fetch(url: &str, seen: &mut Seen) -> ToolOutput {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return ToolOutput::failed(
            "unsupported URL",
            "Only http:// and https:// URLs can be fetched.".into(),
        );
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_millis(WEB_FETCH_TIMEOUT_MS)))
        .max_redirects(MAX_REDIRECTS)
        .http_status_as_error(false)
        .build()
        .into();
    let mut response = match agent.get(url).call() {
        Ok(response) => response,
        Err(e) => {
            return ToolOutput::failed("request failed", format!("Fetching {url} failed: {e}."));
        }
    };
    let status = response.status().as_u16();
    seen.status = Some(status);
    let header = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok());
    seen.content_type = header.map(|v| fact_cut(v, FACT_STRING_BYTES));
    let content_type = header.unwrap_or("").to_ascii_lowercase();
    if status >= 400 {
        return ToolOutput::failed(
            &format!("HTTP {status}"),
            format!("{url} answered HTTP {status}."),
        );
    }
    // Read through the body's reader rather than into a fresh vector so that the
    // bytes that did arrive are counted even when reading stops with an error.
    let mut bytes = Vec::new();
    let body = response
        .body_mut()
        .with_config()
        .limit(WEB_FETCH_BYTES as u64)
        .reader()
        .read_to_end(&mut bytes)
        .map_err(ureq::Error::from);
    seen.bytes = Some(bytes.len() as u64);
    match body {
        Ok(_) => {}
        Err(ureq::Error::BodyExceedsLimit(_)) => {
            seen.truncated = true;
            return ToolOutput::failed(
                "response too large",
                format!("The response is over the {WEB_FETCH_BYTES}-byte bound; nothing is shown."),
            );
        }
        Err(e) => {
            return ToolOutput::failed("request failed", format!("Reading {url} failed: {e}."));
        }
    }
    let textual = content_type.starts_with("text/")
        || content_type.contains("json")
        || content_type.contains("xml")
        || content_type.is_empty();
    if !textual || bytes.contains(&0) {
        return ToolOutput::failed(
            "not text",
            format!(
                "{url} is not text ({}).",
                if content_type.is_empty() {
                    "binary"
                } else {
                    &content_type
                }
            ),
        );
    }
    let raw = String::from_utf8_lossy(&bytes);
    let text = if content_type.contains("html") {
        html_to_text(&raw)
    } else {
        raw.into_owned()
    };
    let (shown, cut) = cut_at(&text, WEB_FETCH_TEXT_BYTES);
    seen.truncated = cut;
    let mut content = shown.to_owned();
    if cut {
        content.push_str(&format!(
            "\n[text cut at {WEB_FETCH_TEXT_BYTES} bytes of {}]",
            text.len()
        ));
    }
    ToolOutput {
        content,
        summary: format!(
            "HTTP {status}, {} bytes of text{}",
            shown.len(),
            if cut { ", cut" } else { "" }
        ),
        is_error: false,
    }
}

/// Text cut to at most `max` bytes on a character boundary, and whether it was cut.
fn cut_at(text: &str, max: usize) -> (&str, bool) {
    let end = text.floor_char_boundary(max);
    (&text[..end], end < text.len())
}

/// Readable text of an HTML page: scripts and styles dropped, block ends as line
/// breaks, tags removed, the common entities decoded, blank runs collapsed. A small
/// hand-written pass: the model needs the words, not a faithful rendering.
fn html_to_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let lower = html.to_ascii_lowercase();
    let mut i = 0;
    while i < html.len() {
        if html.as_bytes()[i] == b'<' {
            let Some(close) = html[i..].find('>') else {
                break;
            };
            let tag = &lower[i + 1..i + close];
            let name: String = tag
                .trim_start_matches('/')
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            if !tag.starts_with('/') && (name == "script" || name == "style") {
                // Skip to the matching end tag.
                let end_tag = format!("</{name}");
                i = match lower[i..].find(&end_tag) {
                    Some(end) => {
                        i + end + lower[i + end..].find('>').map_or(end_tag.len(), |e| e + 1)
                    }
                    None => html.len(),
                };
                continue;
            }
            // A block's start begins a new line; its end needs none of its own.
            if !tag.starts_with('/')
                && matches!(
                    name.as_str(),
                    "br" | "p"
                        | "div"
                        | "li"
                        | "tr"
                        | "h1"
                        | "h2"
                        | "h3"
                        | "h4"
                        | "h5"
                        | "h6"
                        | "pre"
                        | "section"
                        | "article"
                )
            {
                out.push('\n');
            }
            i += close + 1;
        } else {
            let next = html[i..].find('<').map_or(html.len(), |n| i + n);
            out.push_str(&decode_entities(&html[i..next]));
            i = next;
        }
    }
    let mut text = String::new();
    let mut blank = false;
    for line in out
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
    {
        if line.is_empty() {
            if !blank && !text.is_empty() {
                text.push('\n');
            }
            blank = true;
        } else {
            text.push_str(&line);
            text.push('\n');
            blank = false;
        }
    }
    text.trim_end().to_owned()
}

fn decode_entities(text: &str) -> String {
    text.replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;

    use super::*;

    /// Serves one fixed HTTP response per connection, `count` times, on loopback.
    fn serve(responses: Vec<Vec<u8>>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for response in responses {
                let Ok((mut stream, _)) = listener.accept() else {
                    return;
                };
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request);
                let _ = stream.write_all(&response);
            }
        });
        format!("http://{addr}/")
    }

    fn response(status: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
        let mut bytes = format!(
            "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        bytes.extend_from_slice(body);
        bytes
    }

    #[test]
    fn html_becomes_readable_text() {
        let page = b"<html><head><style>p{}</style><script>var x = 1;</script></head>\
            <body><h1>Title</h1><p>Fish &amp; chips</p><ul><li>one</li><li>two</li></ul></body></html>";
        let url = serve(vec![response("200 OK", "text/html; charset=utf-8", page)]);
        let out = run(&json!({"url": url})).output;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(out.content, "Title\nFish & chips\none\ntwo");
        assert!(out.summary.starts_with("HTTP 200"));
    }

    #[test]
    fn errors_binary_and_bounds_are_reported() {
        let big = vec![b'a'; WEB_FETCH_TEXT_BYTES + 10];
        let url = serve(vec![
            response("404 Not Found", "text/plain", b"missing"),
            response("200 OK", "application/octet-stream", &[0, 1, 2]),
            response("200 OK", "text/plain", &big),
        ]);
        assert_eq!(run(&json!({"url": url})).output.summary, "HTTP 404");
        assert_eq!(run(&json!({"url": url})).output.summary, "not text");
        let out = run(&json!({"url": url})).output;
        assert!(!out.is_error);
        assert!(out.content.ends_with(&format!(
            "[text cut at {WEB_FETCH_TEXT_BYTES} bytes of {}]",
            big.len()
        )));
        assert!(run(&json!({"url": "file:///etc/passwd"})).output.is_error);
        assert!(run(&json!({"url": "http://127.0.0.1:1/"})).output.is_error);
    }

    fn web(
        url: &str,
        status: Option<u16>,
        content_type: Option<&str>,
        bytes: Option<u64>,
        truncated: bool,
    ) -> Option<Facts> {
        Some(Facts::Web {
            url: url.to_owned(),
            status,
            content_type: content_type.map(str::to_owned),
            bytes,
            truncated,
        })
    }

    #[test]
    fn facts_record_what_the_response_showed() {
        let big = vec![b'a'; WEB_FETCH_TEXT_BYTES + 10];
        let huge = vec![b'a'; WEB_FETCH_BYTES + 1];
        let url = serve(vec![
            response("200 OK", "Text/Plain", b"hello"),
            response("404 Not Found", "text/plain", b"missing"),
            response("200 OK", "text/plain", &big),
            response("200 OK", "text/plain", &huge),
            response("200 OK", "image/png", &[0, 1, 2]),
        ]);
        assert_eq!(
            run(&json!({"url": url})).facts,
            web(&url, Some(200), Some("Text/Plain"), Some(5), false)
        );
        // An error status ends the call before the body is read.
        assert_eq!(
            run(&json!({"url": url})).facts,
            web(&url, Some(404), Some("text/plain"), None, false)
        );
        assert_eq!(
            run(&json!({"url": url})).facts,
            web(
                &url,
                Some(200),
                Some("text/plain"),
                Some(big.len() as u64),
                true
            )
        );
        assert_eq!(
            run(&json!({"url": url})).facts,
            web(
                &url,
                Some(200),
                Some("text/plain"),
                Some(WEB_FETCH_BYTES as u64),
                true
            )
        );
        assert_eq!(
            run(&json!({"url": url})).facts,
            web(&url, Some(200), Some("image/png"), Some(3), false)
        );
        assert_eq!(
            run(&json!({"url": "ftp://example.com/"})).facts,
            web("ftp://example.com/", None, None, None, false)
        );
        assert_eq!(
            run(&json!({"url": "http://127.0.0.1:1/"})).facts,
            web("http://127.0.0.1:1/", None, None, None, false)
        );
        assert_eq!(run(&json!({"link": url})).facts, None);
    }
}
