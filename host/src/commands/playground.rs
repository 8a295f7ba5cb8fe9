//! `olm-guard playground`: serves the browser playground that `make
//! playground` builds into `dist/playground/` (playground/) on
//! loopback. Static files only: the page evaluates everything in the
//! browser and sends nothing back.

use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;

use crate::modules::DistArgs;

#[derive(Args)]
#[command(after_help = "\
Examples:
  make playground && olm-guard playground          # http://127.0.0.1:8080/
  olm-guard playground --port 9000
  olm-guard playground --port 0 --dir /tmp/pg      # any free port, another build

The page is found where the modules are (`run --help`, MODULE): --dir, else
playground/ in the module directory (--dist, $OLM_GUARD_DIST, ./dist), else
the one installed beside the modules (<prefix>/share/olm-guard/playground,
which `make install` writes).

Exit codes: 0 never (it serves until interrupted); 2 the directory has no
index.html (run `make playground` first) or the port cannot be bound.")]
pub struct PlaygroundArgs {
    /// The port to listen on, on 127.0.0.1 only; 0 picks a free one (printed).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// The built page (`make playground` writes dist/playground); found
    /// beside the modules otherwise (above).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub dist: DistArgs,
}

/// The built page: `--dir`, else `playground/` in the module directory, else
/// beside it (`share/olm-guard/playground` beside `share/olm-guard/modules`).
fn page_dir(args: &PlaygroundArgs) -> anyhow::Result<PathBuf> {
    if let Some(dir) = &args.dir {
        return Ok(dir.clone());
    }
    let modules = args.dist.locate().context(
        "no playground: build it with `make playground` (dist/playground), or pass --dir DIR",
    )?;
    let inside = modules.dir.join("playground");
    let beside = modules.dir.parent().map(|share| share.join("playground"));
    Ok(match beside {
        Some(beside) if !inside.is_dir() && beside.is_dir() => beside,
        _ => inside,
    })
}

pub fn playground(args: PlaygroundArgs) -> anyhow::Result<ExitCode> {
    let dir = page_dir(&args)?;
    if !dir.join("index.html").is_file() {
        bail!(
            "{} has no index.html: build the playground first with `make playground`, or pass \
             --dir DIR",
            dir.display()
        );
    }
    let server = tiny_http::Server::http(("127.0.0.1", args.port))
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| format!("cannot listen on 127.0.0.1:{}", args.port))?;
    let address = server
        .server_addr()
        .to_ip()
        .context("the server has no IP address")?;
    println!(
        "olm-guard playground: http://{address}/ (serving {}; Ctrl-C stops)",
        dir.display()
    );
    for request in server.incoming_requests() {
        let response = respond(&dir, request.method(), request.url());
        // A client that went away is no reason to stop serving.
        let _ = request.respond(response);
    }
    Ok(ExitCode::SUCCESS)
}

type Response = tiny_http::Response<std::io::Cursor<Vec<u8>>>;

fn respond(dir: &Path, method: &tiny_http::Method, url: &str) -> Response {
    if !matches!(method, tiny_http::Method::Get | tiny_http::Method::Head) {
        return text(405, "only GET and HEAD");
    }
    let Some(path) = resolve(dir, url) else {
        return text(404, "not found");
    };
    match std::fs::read(&path) {
        Ok(bytes) => with_headers(tiny_http::Response::from_data(bytes), content_type(&path)),
        Err(_) => text(404, "not found"),
    }
}

fn text(status: u16, body: &str) -> Response {
    with_headers(
        tiny_http::Response::from_data(body.as_bytes().to_vec()).with_status_code(status),
        "text/plain; charset=utf-8",
    )
}

fn with_headers(response: Response, content_type: &str) -> Response {
    let header = |name: &str, value: &str| {
        tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()).ok()
    };
    [
        header("Content-Type", content_type),
        // A rebuilt page shows up on reload.
        header("Cache-Control", "no-cache"),
        header("X-Content-Type-Options", "nosniff"),
    ]
    .into_iter()
    .flatten()
    .fold(response, |r, h| r.with_header(h))
}

/// The file under `dir` that `url` names: `/` is `index.html`; the query
/// and fragment are ignored; anything but plain names (`..`, a root, a
/// percent-encoded byte, which we never decode) is refused.
fn resolve(dir: &Path, url: &str) -> Option<PathBuf> {
    let path = url.split(['?', '#']).next().unwrap_or("");
    let path = path.strip_prefix('/')?;
    let path = if path.is_empty() || path.ends_with('/') {
        format!("{path}index.html")
    } else {
        path.to_string()
    };
    if path.contains(['%', '\\']) {
        return None;
    }
    let relative = Path::new(&path);
    if !relative
        .components()
        .all(|c| matches!(c, Component::Normal(_)))
    {
        return None;
    }
    let file = dir.join(relative);
    file.is_file().then_some(file)
}

/// The Content-Type of the files the page is made of; browsers compile a
/// module with `WebAssembly.instantiateStreaming` only when served as
/// `application/wasm`, and load ES modules only with a JavaScript type.
fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("wasm") => "application/wasm",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_resolve_to_files_under_the_directory_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("index.html"), "<html>").unwrap();
        std::fs::write(dir.path().join("a.wasm"), b"\0asm").unwrap();
        let at = |url: &str| resolve(dir.path(), url);
        assert_eq!(at("/"), Some(dir.path().join("index.html")));
        assert_eq!(at("/?x=1#y"), Some(dir.path().join("index.html")));
        assert_eq!(at("/a.wasm"), Some(dir.path().join("a.wasm")));
        assert_eq!(at("/missing.js"), None);
        assert_eq!(at("/../index.html"), None);
        assert_eq!(at("/%2e%2e/index.html"), None);
        assert_eq!(at("//etc/passwd"), None);
        assert_eq!(at("index.html"), None);
    }

    #[test]
    fn the_page_is_served_with_types_a_browser_accepts() {
        assert_eq!(content_type(Path::new("x_bg.wasm")), "application/wasm");
        assert!(content_type(Path::new("app.js")).starts_with("text/javascript"));
        assert!(content_type(Path::new("index.html")).starts_with("text/html"));
        assert!(content_type(Path::new("style.css")).starts_with("text/css"));
    }
}
