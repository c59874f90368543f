//! A real MCP server the project did not write, for tests and benchmarks: the
//! reference "everything" server from the npm registry, at a pinned version that runs
//! on Node.js 20, installed on first use into a cache folder the caller names; and the
//! same installation for any pinned npm package (the ACP TypeScript SDK's client).
//!
//! Installation happens once per cache folder, under a file lock, into a temporary
//! folder renamed into place, so parallel tests and an interrupted install never see a
//! half-installed server.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The npm package.
pub const EVERYTHING_PACKAGE: &str = "@modelcontextprotocol/server-everything";
/// Its pinned version.
pub const EVERYTHING_VERSION: &str = "2026.8.31";

/// The server's entry script, installed under `cache` if it is not yet. Run it as
/// `node <script> stdio` or, with `PORT` set, `node <script> streamableHttp`.
///
/// Needs `node` and `npm` on `PATH` and the npm registry; the error says which step
/// failed.
pub fn everything_server(cache: &Path) -> Result<PathBuf, String> {
    let root = npm_package(cache, EVERYTHING_PACKAGE, EVERYTHING_VERSION)?;
    let script = root.join(format!("node_modules/{EVERYTHING_PACKAGE}/dist/index.js"));
    if script.is_file() {
        Ok(script)
    } else {
        Err(format!("{} is missing after install", script.display()))
    }
}

/// Installs `package@version` from the npm registry under `cache` (once, under a file
/// lock, renamed into place) and returns the folder whose `node_modules` holds it.
///
/// Needs `node` and `npm` on `PATH` and the npm registry; the error says which step
/// failed.
pub fn npm_package(cache: &Path, package: &str, version: &str) -> Result<PathBuf, String> {
    let name = package.trim_start_matches('@').replace('/', "-");
    let root = cache.join(format!("npm-{name}-{version}"));
    let installed = |root: &Path| root.join("node_modules").join(package).is_dir();
    if installed(&root) {
        return Ok(root);
    }
    std::fs::create_dir_all(cache)
        .map_err(|e| format!("cannot create {}: {e}", cache.display()))?;
    let lock_path = cache.join(format!("npm-{name}.lock"));
    let lock = std::fs::File::create(&lock_path)
        .map_err(|e| format!("cannot create {}: {e}", lock_path.display()))?;
    lock.lock()
        .map_err(|e| format!("cannot lock {}: {e}", lock_path.display()))?;
    // Another test may have installed it while this one waited.
    if installed(&root) {
        return Ok(root);
    }
    let staging = cache.join(format!("npm-{name}-staging-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(|e| format!("cannot create staging: {e}"))?;
    let status = Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--no-save",
            "--loglevel=error",
        ])
        .arg("--prefix")
        .arg(&staging)
        .arg(format!("{package}@{version}"))
        .stdin(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("cannot run npm (is Node.js installed?): {e}"))?;
    if !status.success() {
        return Err(format!("npm install {package} failed: {status}"));
    }
    std::fs::rename(&staging, &root).map_err(|e| format!("cannot place the install: {e}"))?;
    if installed(&root) {
        Ok(root)
    } else {
        Err(format!(
            "{package} is missing after install in {}",
            root.display()
        ))
    }
}
