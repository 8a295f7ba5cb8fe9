//! `--record` / `--replay` for `olm-guard run`, and `--record-dir` /
//! `--replay-dir` for `olm-guard test`: host-capability sessions in kwctl's
//! format (`olm_guard_evaluator::session`), replayable with
//! `kwctl run --allow-context-aware --replay-host-capabilities-interactions`.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;

use olm_guard_evaluator::scenario::Sessions;
use olm_guard_evaluator::{ClusterContext, SessionRecorder, SessionReplay};

/// Where `run` answers host calls from, and whether it records them.
#[derive(Args)]
pub struct SessionArgs {
    /// Write every host-capability exchange of the evaluation (request and
    /// answer, errors included) to FILE, in kwctl's session format.
    #[arg(long, value_name = "FILE", conflicts_with = "replay")]
    pub record: Option<PathBuf>,
    /// Answer host calls from a session FILE (kwctl's format) instead of
    /// --cluster, strictly in order; a call that differs from the recorded
    /// one fails, showing both.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["cluster", "kubeconfig", "context"])]
    pub replay: Option<PathBuf>,
}

/// The cluster context of one `run`, and what to do once it is evaluated.
pub enum RunContext {
    /// The cluster alone.
    Snapshot,
    /// The snapshot, recorded to the file.
    Record(Arc<SessionRecorder>, PathBuf),
    /// The session file.
    Replay(Arc<SessionReplay>, PathBuf),
}

impl SessionArgs {
    /// The context to evaluate in: `cluster` (a snapshot, or a live
    /// cluster), recorded or replaced by the session.
    pub fn context(&self, cluster: ClusterContext) -> anyhow::Result<(ClusterContext, RunContext)> {
        if let Some(path) = &self.replay {
            let replay = Arc::new(SessionReplay::load(path)?);
            return Ok((replay.clone(), RunContext::Replay(replay, path.clone())));
        }
        let snapshot = cluster;
        match &self.record {
            Some(path) => {
                let recorder = Arc::new(SessionRecorder::new(snapshot));
                Ok((recorder.clone(), RunContext::Record(recorder, path.clone())))
            }
            None => Ok((snapshot, RunContext::Snapshot)),
        }
    }
}

impl RunContext {
    /// Saves a recording; fails a replay that did not describe the
    /// evaluation, and warns, as kwctl does, about exchanges left over.
    pub fn finish(self) -> anyhow::Result<()> {
        match self {
            RunContext::Snapshot => Ok(()),
            RunContext::Record(recorder, path) => {
                let session = recorder.session();
                session.save(&path)?;
                eprintln!(
                    "olm-guard: recorded {} host-capability exchange(s) to {}",
                    session.exchanges.len(),
                    path.display()
                );
                Ok(())
            }
            RunContext::Replay(replay, path) => {
                if let Some(problem) = replay.problems().into_iter().next() {
                    anyhow::bail!(
                        "{problem} (the module's host calls differ from the session: record it again with --record)"
                    );
                }
                let left = replay.remaining();
                if left > 0 {
                    eprintln!(
                        "olm-guard: warning: {}: {left} recorded exchange(s) were not replayed",
                        path.display()
                    );
                }
                Ok(())
            }
        }
    }
}

/// Where `test` records or replays every scenario's session.
#[derive(Args)]
pub struct SessionDirArgs {
    /// Record every scenario's host-capability session to
    /// DIR/<policy>/<scenario>.yml (kwctl's format).
    #[arg(long, value_name = "DIR", conflicts_with = "replay_dir")]
    pub record_dir: Option<PathBuf>,
    /// Answer every scenario's host calls from DIR/<policy>/<scenario>.yml
    /// instead of its cluster.yaml.
    #[arg(long, value_name = "DIR")]
    pub replay_dir: Option<PathBuf>,
}

impl SessionDirArgs {
    /// What the scenario runner does with sessions.
    pub fn sessions(&self) -> anyhow::Result<Sessions> {
        Ok(match (&self.record_dir, &self.replay_dir) {
            (Some(dir), _) => {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create --record-dir {}", dir.display()))?;
                Sessions::Record(dir.clone())
            }
            (None, Some(dir)) => {
                if !dir.is_dir() {
                    anyhow::bail!(
                        "--replay-dir {} is not a directory: record the sessions first with --record-dir",
                        dir.display()
                    );
                }
                Sessions::Replay(dir.clone())
            }
            (None, None) => Sessions::Snapshot,
        })
    }
}
