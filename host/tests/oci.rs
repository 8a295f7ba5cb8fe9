//! `olm-guard push`, `pull` and `run --policy registry://…` against a real
//! registry on loopback: Debian's `docker-registry`, the CNCF distribution
//! registry (https://github.com/distribution/distribution). Each test starts
//! its own on a free port with its own storage and stops it when done.
//! `scripts/test-deps.sh` installs it; where it cannot, the tests fail
//! saying how to install it.

use std::path::{Path, PathBuf};

mod common;
use common::oci_registry::{Registry, field, ok, olm_guard, refused};
use common::{dist, root};

/// The six modules, by name.
fn modules() -> Vec<(String, PathBuf)> {
    let mut modules: Vec<(String, PathBuf)> = std::fs::read_dir(dist())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "wasm"))
        .map(|path| {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            (name, path)
        })
        .collect();
    modules.sort();
    assert_eq!(
        modules.len(),
        6,
        "dist/ should hold six modules: run make dist"
    );
    modules
}

/// A denied scenario of `module` (falling back to any): its `run` arguments.
fn scenario_args(module: &str) -> Vec<String> {
    let dir = root().join("testdata").join(module);
    let mut scenarios: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.join("request.json").is_file())
        .collect();
    scenarios.sort_by_key(|path| !path.to_string_lossy().ends_with("-denied"));
    let scenario = scenarios
        .first()
        .unwrap_or_else(|| panic!("no scenario in {}", dir.display()));
    let mut args = vec![
        "--request".to_string(),
        scenario.join("request.json").display().to_string(),
    ];
    for (flag, file) in [
        ("--settings", "settings.json"),
        ("--cluster", "cluster.yaml"),
    ] {
        if scenario.join(file).is_file() {
            args.push(flag.into());
            args.push(scenario.join(file).display().to_string());
        }
    }
    args
}

fn run(home: &Path, policy: &str, extra: &[String], module: &str) -> serde_json::Value {
    let mut args = vec![
        "run".to_string(),
        "-o".into(),
        "json".into(),
        "--policy".into(),
        policy.into(),
    ];
    args.extend(extra.iter().cloned());
    args.extend(scenario_args(module));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    serde_json::from_str(&ok(olm_guard(home, &args))).unwrap()
}

/// push → pull (by tag, into a file; by digest, into the cache) →
/// byte-identical → the same verdict from the file, the pulled copy and
/// `run --policy registry://…`, for every module.
fn round_trip(registry: &Registry) {
    let home = tempfile::tempdir().unwrap();
    let flags = registry.flags();
    let cache = home.path().join("modules");
    let cache_flags: Vec<String> = flags
        .iter()
        .cloned()
        .chain(["--cache-dir".into(), cache.display().to_string()])
        .collect();
    for (name, path) in modules() {
        let reference = format!("{}:v1", registry.reference(&format!("policies/{name}")));
        let mut args = vec!["push", path.to_str().unwrap(), &reference];
        args.extend(flags.iter().map(String::as_str));
        let pushed = ok(olm_guard(home.path(), &args));
        assert_eq!(field(&pushed, "pushed"), reference);
        let digest = field(&pushed, "digest");
        assert!(
            digest.starts_with("sha256:") && digest.len() == 71,
            "{pushed}"
        );
        let immutable = field(&pushed, "immutable");
        assert_eq!(
            immutable,
            format!(
                "{}@{digest}",
                registry.reference(&format!("policies/{name}"))
            )
        );

        let out = home.path().join(format!("{name}.wasm"));
        let mut args = vec!["pull", &reference, "--output-file", out.to_str().unwrap()];
        args.extend(flags.iter().map(String::as_str));
        let pulled = ok(olm_guard(home.path(), &args));
        assert_eq!(field(&pulled, "digest"), digest);
        let original = std::fs::read(&path).unwrap();
        assert!(
            std::fs::read(&out).unwrap() == original,
            "{name}: pulled bytes differ"
        );

        let mut args = vec!["pull", &immutable];
        args.extend(cache_flags.iter().map(String::as_str));
        let by_digest = ok(olm_guard(home.path(), &args));
        let cached = PathBuf::from(field(&by_digest, "module"));
        assert_eq!(
            cached,
            cache.join("sha256").join(format!("{}.wasm", &digest[7..]))
        );
        assert!(
            std::fs::read(&cached).unwrap() == original,
            "{name}: cached bytes differ"
        );

        let from_file = run(home.path(), path.to_str().unwrap(), &[], &name);
        let from_pull = run(home.path(), out.to_str().unwrap(), &[], &name);
        let from_registry = run(home.path(), &reference, &cache_flags, &name);
        assert_eq!(from_pull, from_file, "{name}");
        assert_eq!(from_registry, from_file, "{name}");
        assert!(
            from_file.pointer("/response/allowed").is_some(),
            "{name}: {from_file}"
        );
    }
}

#[test]
fn round_trip_over_http() {
    let registry = Registry::start(false);
    round_trip(&registry);
}

#[test]
fn round_trip_over_tls_with_a_test_ca() {
    let registry = Registry::start(true);
    round_trip(&registry);

    // Without the CA the registry's certificate is not trusted.
    let home = tempfile::tempdir().unwrap();
    let (_, module) = &modules()[0];
    let reference = format!("{}:v2", registry.reference("policies/untrusted"));
    let error = refused(olm_guard(
        home.path(),
        &["push", module.to_str().unwrap(), &reference],
    ));
    assert!(error.contains(&reference), "{error}");
    assert!(error.to_lowercase().contains("certificate"), "{error}");
}

#[test]
fn run_uses_the_cache_while_the_tag_keeps_its_digest() {
    let registry = Registry::start(false);
    let home = tempfile::tempdir().unwrap();
    let modules = modules();
    let (name, path) = &modules[0];
    let reference = format!("{}:stable", registry.reference("policies/moving"));
    let cache = home.path().join("modules");
    let flags = vec![
        "--insecure".to_string(),
        "--cache-dir".into(),
        cache.display().to_string(),
    ];
    ok(olm_guard(
        home.path(),
        &["push", path.to_str().unwrap(), &reference, "--insecure"],
    ));
    let first = run(home.path(), &reference, &flags, name);
    let files = |dir: &Path| -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("sha256"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        files
    };
    let cached = files(&cache);
    assert_eq!(cached.len(), 1);
    let inode =
        |path: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(path).unwrap());
    let before = inode(&cached[0]);
    assert_eq!(run(home.path(), &reference, &flags, name), first);
    assert_eq!(inode(&cached[0]), before, "the second run pulled again");

    // The tag moves to another module: the next run pulls that one.
    let (_, other) = &modules[1];
    ok(olm_guard(
        home.path(),
        &["push", other.to_str().unwrap(), &reference, "--insecure"],
    ));
    let pulled = ok(olm_guard(
        home.path(),
        &[
            "pull",
            &reference,
            "--insecure",
            "--cache-dir",
            cache.to_str().unwrap(),
        ],
    ));
    assert_eq!(files(&cache).len(), 2);
    let module = PathBuf::from(field(&pulled, "module"));
    assert!(std::fs::read(module).unwrap() == std::fs::read(other).unwrap());
}

/// A registry without TLS, reached without --insecure: the TLS library's
/// words ("received corrupt message of type InvalidContentType") come with
/// what they mean and the flag that fixes it, for every command that
/// reaches a registry.
#[test]
fn a_plain_http_registry_is_named_with_the_fix() {
    let registry = Registry::start(false);
    let home = tempfile::tempdir().unwrap();
    let (_, module) = &modules()[0];
    let reference = format!("{}:v1", registry.reference("policies/plain"));
    let want = format!(
        "the registry at {} speaks plain HTTP, not HTTPS: add --insecure",
        registry.host
    );
    let push = refused(olm_guard(
        home.path(),
        &["push", module.to_str().unwrap(), &reference],
    ));
    assert!(push.contains(&want), "{push}");
    let pull = refused(olm_guard(home.path(), &["pull", &reference]));
    assert!(pull.contains(&want), "{pull}");
}

#[test]
fn refusals_are_one_line() {
    let registry = Registry::start(false);
    let home = tempfile::tempdir().unwrap();
    let (name, module) = &modules()[0];

    // An un-annotated module is refused before anything is sent.
    let bare = home.path().join("bare.wasm");
    std::fs::write(&bare, wat::parse_str("(module)").unwrap()).unwrap();
    let reference = format!("{}:v1", registry.reference("policies/bare"));
    let error = refused(olm_guard(
        home.path(),
        &["push", bare.to_str().unwrap(), &reference, "--insecure"],
    ));
    assert!(error.contains("bare.wasm: not annotated"), "{error}");
    assert!(error.contains("olm-guard annotate"), "{error}");

    // A missing tag, in a repository that exists and in one that does not.
    let present = format!("{}:v1", registry.reference(&format!("policies/{name}")));
    ok(olm_guard(
        home.path(),
        &["push", module.to_str().unwrap(), &present, "--insecure"],
    ));
    for repo in [format!("policies/{name}"), "policies/nothing-here".into()] {
        let missing = format!("{}:v9", registry.reference(&repo));
        let error = refused(olm_guard(home.path(), &["pull", &missing, "--insecure"]));
        assert_eq!(error, format!("olm-guard: {missing}: tag v9 not found"));
        let mut args = vec!["run".to_string(), "--policy".into(), missing.clone()];
        args.push("--insecure".into());
        args.extend(scenario_args(name));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let error = refused(olm_guard(home.path(), &args));
        assert!(
            error.contains(&format!("{missing}: tag v9 not found")),
            "{error}"
        );
    }

    // Artifacts that are not Kubewarden policies.
    let wasm = std::fs::read(module).unwrap();
    let cases = [
        (
            "tarball",
            oci_client::manifest::IMAGE_LAYER_MEDIA_TYPE,
            oci_client::manifest::IMAGE_CONFIG_MEDIA_TYPE,
            "layer media type application/vnd.oci.image.layer.v1.tar",
        ),
        (
            "wasm-wrong-config",
            oci_client::manifest::WASM_LAYER_MEDIA_TYPE,
            oci_client::manifest::IMAGE_CONFIG_MEDIA_TYPE,
            "config media type application/vnd.oci.image.config.v1+json",
        ),
    ];
    for (repo, layer_type, config_type, reason) in cases {
        let reference = format!("{}/{repo}:v1", registry.host);
        push_artifact(&reference, &wasm, layer_type, config_type);
        let reference = format!("registry://{reference}");
        let error = refused(olm_guard(home.path(), &["pull", &reference, "--insecure"]));
        assert!(
            error.starts_with(&format!(
                "olm-guard: {reference} is not a Kubewarden policy: {reason}"
            )),
            "{error}"
        );
    }

    // Not a registry reference.
    let error = refused(olm_guard(
        home.path(),
        &["pull", &format!("{}/x:v1", registry.host), "--insecure"],
    ));
    assert!(
        error.contains("registry://host[:port]/repository:tag"),
        "{error}"
    );
}

/// Push an artifact of the given media types with oci-client itself.
fn push_artifact(reference: &str, data: &[u8], layer_type: &str, config_type: &str) {
    use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
    olm_guard_oci::crypto_provider();
    let client = oci_client::Client::new(ClientConfig {
        protocol: ClientProtocol::Http,
        ..ClientConfig::default()
    });
    let reference: oci_client::Reference = reference.parse().unwrap();
    let layers = [ImageLayer::new(data.to_vec(), layer_type.into(), None)];
    let config = Config::new(b"{}".to_vec(), config_type.into(), None);
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(client.push(
            &reference,
            &layers,
            config,
            &oci_client::secrets::RegistryAuth::Anonymous,
            None,
        ))
        .unwrap();
}
