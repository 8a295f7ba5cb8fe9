//! The CLI as `make examples` builds it: the commands that need a feature it
//! leaves out refuse with one line naming the feature and the build that has
//! it, and exit 2, before doing anything else; the rest of the CLI is there.

use std::process::{Command, Output};

fn olm_guard(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_olm-guard-minimal"))
        .args(args)
        .output()
        .expect("the minimal olm-guard runs")
}

/// Exit 2 and one line on stderr that names the feature and the build with
/// it.
#[track_caller]
fn assert_refused(args: &[&str], feature: &str) {
    let output = olm_guard(args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
    assert!(stderr.contains(feature), "{args:?}: {stderr}");
    assert!(
        stderr.contains("build it with `cargo build -p olm-guard-host`"),
        "{args:?}: {stderr}"
    );
}

#[test]
fn registry_commands_name_the_feature_they_need() {
    let registry = "built without registry support (cargo feature `registry`";
    assert_refused(&["pull", "registry://ghcr.io/example/policy:v1"], registry);
    assert_refused(
        &["keygen", "--output-key-prefix", "/nonexistent/key"],
        registry,
    );
}

#[test]
fn plot_names_the_feature_it_needs() {
    assert_refused(
        &["bench", "--scale", "--plot", "/nonexistent/scale.png"],
        "built without the `plot` cargo feature",
    );
}

#[test]
fn a_live_cluster_names_the_feature_it_needs() {
    let live = "built without live-cluster support (cargo feature `live`";
    assert_refused(&["audit", "--kubeconfig", "/nonexistent/kubeconfig"], live);
    assert_refused(&["snapshot", "--context", "prod"], live);
}

#[test]
fn the_rest_of_the_cli_is_there() {
    let output = olm_guard(&["--help"]);
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    for command in ["run", "test", "annotate", "scaffold", "audit"] {
        assert!(help.contains(command), "--help lacks {command}: {help}");
    }
}
