//! A real registry on loopback for the tests that push and pull: Debian's
//! `docker-registry`, the CNCF distribution registry
//! (https://github.com/distribution/distribution), on a port the system
//! gives it, with its own storage, stopped when dropped; and the CLI run against it, reading no
//! credentials or cache of the user running the tests.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::root;

/// Where `docker-registry` is, installing it with `scripts/test-deps.sh`
/// when it can; a test that needs it fails without it, in one line that
/// says how to install it (a registry test that passed by skipping would
/// prove nothing).
pub fn registry_binary() -> PathBuf {
    let find = || {
        std::env::var_os("PATH")
            .into_iter()
            .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
            .chain([PathBuf::from("/usr/bin")])
            .map(|dir| dir.join("docker-registry"))
            .find(|path| path.is_file())
    };
    if let Some(found) = find() {
        return found;
    }
    // The Makefile runs it before the tests; a bare `cargo test` gets the
    // same chance.
    let _ = Command::new(root().join("scripts/test-deps.sh")).status();
    find().unwrap_or_else(|| {
        panic!(
            "docker-registry (the CNCF distribution registry) is not installed: run scripts/test-deps.sh as root, or apt-get install -y docker-registry"
        )
    })
}

/// A registry process; killed when dropped.
pub struct Registry {
    child: Child,
    /// Its configuration, storage and log.
    pub dir: TempDir,
    /// `127.0.0.1:<port>`.
    pub host: String,
    /// The test CA's PEM when the registry serves TLS.
    pub ca: Option<PathBuf>,
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Registry {
    /// Start one, serving TLS with a test CA when `tls`, on a port the
    /// system gives it: `addr: 127.0.0.1:0` binds whatever port is free at
    /// the moment the registry binds, and the registry logs the address it
    /// listens on ("listening on 127.0.0.1:N"), which is read back. No port
    /// is picked beforehand, so none can be taken by another process (or
    /// another test) before the registry binds it.
    pub fn start(tls: bool) -> Registry {
        let binary = registry_binary();
        let dir = tempfile::tempdir().unwrap();
        let mut config = format!(
            "version: 0.1\nlog:\n  level: info\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:0\n",
            dir.path().join("storage").display()
        );
        let ca = tls.then(|| {
            let (ca, cert, key) = test_pki();
            let paths = ["ca.pem", "server.pem", "server.key"].map(|f| dir.path().join(f));
            for (path, text) in paths.iter().zip([ca, cert, key]) {
                std::fs::write(path, text).unwrap();
            }
            config.push_str(&format!(
                "  tls:\n    certificate: {}\n    key: {}\n",
                paths[1].display(),
                paths[2].display()
            ));
            paths[0].clone()
        });
        let config_path = dir.path().join("config.yml");
        std::fs::write(&config_path, config).unwrap();
        let log = std::fs::File::create(dir.path().join("registry.log")).unwrap();
        let child = Command::new(binary)
            .arg("serve")
            .arg(&config_path)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut registry = Registry {
            child,
            dir,
            host: String::new(),
            ca,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        registry.host = loop {
            if let Some(host) = registry.listening_on() {
                break host;
            }
            if let Some(status) = registry.child.try_wait().unwrap() {
                panic!("docker-registry exited ({status}): {}", registry.log());
            }
            assert!(
                Instant::now() < deadline,
                "docker-registry did not say where it listens within 60 s: {}",
                registry.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        registry
    }

    /// The address the registry logged it listens on, once it has.
    fn listening_on(&self) -> Option<String> {
        let log = self.log();
        // `msg="listening on 127.0.0.1:N"`, with `, tls` after the address
        // when it serves TLS.
        let rest = log.split("msg=\"listening on ").nth(1)?;
        let host = rest.split(['"', ',']).next()?;
        (!host.ends_with(":0")).then(|| host.to_string())
    }

    /// What it logged.
    pub fn log(&self) -> String {
        let mut text = String::new();
        let _ = std::fs::File::open(self.dir.path().join("registry.log"))
            .and_then(|mut f| f.read_to_string(&mut text));
        text
    }

    /// `registry://<host>/<repo>`.
    pub fn reference(&self, repo: &str) -> String {
        format!("registry://{}/{repo}", self.host)
    }

    /// How our CLI reaches this registry.
    pub fn flags(&self) -> Vec<String> {
        match &self.ca {
            Some(ca) => vec!["--ca-cert".into(), ca.display().to_string()],
            None => vec!["--insecure".into()],
        }
    }
}

/// A CA and a server certificate for 127.0.0.1 and localhost, as PEM:
/// (CA certificate, server certificate, server key).
pub fn test_pki() -> (String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "olm-guard test CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let server_key = KeyPair::generate().unwrap();
    let mut server_params =
        CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
    server_params
        .distinguished_name
        .push(DnType::CommonName, "127.0.0.1");
    let server_cert = server_params.signed_by(&server_key, &issuer).unwrap();
    (ca_cert.pem(), server_cert.pem(), server_key.serialize_pem())
}

/// The CLI, reading no credentials, cache or key password of the user
/// running the tests.
pub fn olm_guard(home: &Path, args: &[&str]) -> Output {
    olm_guard_with(home, args, &[])
}

/// [`olm_guard`] with these environment variables set (COSIGN_PASSWORD),
/// in `home` as its working directory.
pub fn olm_guard_with(home: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    // OLM_GUARD_BIN: where several worktrees share one target directory,
    // the uplifted `debug/olm-guard` may be another worktree's build.
    let binary = std::env::var_os("OLM_GUARD_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_olm-guard")),
        PathBuf::from,
    );
    Command::new(binary)
        .args(args)
        .env("DOCKER_CONFIG", home.join("docker"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env_remove("OLM_GUARD_CA_CERT")
        .env_remove("OLM_GUARD_CACHE_DIR")
        .env_remove("COSIGN_PASSWORD")
        .envs(envs.iter().copied())
        .current_dir(home)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The stdout of a command that succeeded.
pub fn ok(output: Output) -> String {
    assert!(
        output.status.success(),
        "olm-guard failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The one-line error of a failed command.
pub fn refused(output: Output) -> String {
    assert!(
        !output.status.success(),
        "olm-guard should have failed: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    let stderr = String::from_utf8(output.stderr).unwrap();
    let line = stderr.trim_end();
    assert!(
        line.starts_with("olm-guard: ") && !line.contains('\n'),
        "not one line: {stderr}"
    );
    line.to_owned()
}

/// `key value` lines of push/pull output.
pub fn field(stdout: &str, key: &str) -> String {
    stdout
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{key} ")))
        .unwrap_or_else(|| panic!("no {key} in {stdout}"))
        .to_owned()
}
