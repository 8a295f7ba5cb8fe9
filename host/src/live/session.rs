//! The connection to the cluster the flags name ([`Session`]) and the host
//! calls it answers ([`LiveContext`]); without the `live` feature, the same
//! items refusing every use with one line that says how to build it in.

use olm_guard_evaluator::ClusterContext;
use olm_guard_snapshot::Snapshot;

use super::*;

pub use imp::{LiveContext, ReportTarget, Session};

/// What writing an audit's reports into the cluster did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReportsWritten {
    /// Reports that were not there.
    pub created: usize,
    /// Reports of the same name overwritten.
    pub updated: usize,
    /// Reports of an earlier audit deleted.
    pub deleted: usize,
}

#[cfg(feature = "live")]
impl From<olm_guard_live::ReportsWritten> for ReportsWritten {
    fn from(written: olm_guard_live::ReportsWritten) -> Self {
        ReportsWritten {
            created: written.created,
            updated: written.updated,
            deleted: written.deleted,
        }
    }
}

#[cfg(feature = "live")]
mod imp {
    use std::sync::Arc;

    use std::io::IsTerminal;

    use olm_guard_live::{Live, LiveCluster, Resource, Target};

    use super::*;

    /// A connection to the cluster the flags name.
    pub struct Session {
        live: Arc<Live>,
    }

    /// Where an audit's reports are written ([`Session::report_target`]).
    pub struct ReportTarget {
        /// The namespaced kind and the cluster kind.
        pub kinds: Vec<Kind>,
        resources: olm_guard_live::ReportKinds,
    }

    /// The host calls of an evaluation, answered by the cluster (and by a
    /// snapshot for what it does not serve).
    pub struct LiveContext {
        cluster: Arc<LiveCluster>,
    }

    impl LiveContext {
        /// The context an evaluation is answered from.
        pub fn cluster(&self) -> ClusterContext {
            self.cluster.clone()
        }

        /// The first failure to read the cluster, if a lookup met one
        /// (it failed closed): the command must not report as complete.
        pub fn failure(&self) -> Option<String> {
            self.cluster.access_failure().map(|e| e.to_string())
        }

        /// Takes the objects of `kind` just listed (every one, unselected)
        /// as the server's answer to the lookups that list them, as a synced
        /// reflector answers: they are not listed a second time.
        pub fn seed(&self, kind: &Kind, objects: &[Value]) -> anyhow::Result<()> {
            if let Some(resource) = self
                .cluster
                .live()
                .resource(&kind.api_version, &kind.kind)?
            {
                self.cluster.seed(&resource, objects.to_vec());
            }
            Ok(())
        }
    }

    /// Reports the progress of listing one kind: a spinner on a terminal,
    /// else one line once the kind is read.
    pub struct ListProgress {
        bar: Option<indicatif::ProgressBar>,
        qualified: String,
        server: String,
        started: std::time::Instant,
    }

    impl ListProgress {
        /// Listing `kind` from `server` begins.
        pub fn start(kind: &Kind, server: &str) -> ListProgress {
            let bar = std::io::stderr().is_terminal().then(|| {
                let bar = indicatif::ProgressBar::new_spinner();
                bar.set_message(format!("listing {}", kind.qualified));
                bar.enable_steady_tick(Duration::from_millis(120));
                bar
            });
            ListProgress {
                bar,
                qualified: kind.qualified.clone(),
                server: server.to_string(),
                started: std::time::Instant::now(),
            }
        }

        /// `read` objects so far.
        pub fn update(&self, read: usize) {
            if let Some(bar) = &self.bar {
                bar.set_message(format!(
                    "listing {}: {}",
                    self.qualified,
                    crate::output::count(read, "object")
                ));
            }
        }

        /// The kind is read: `count` objects.
        pub fn finish(self, count: usize) {
            if let Some(bar) = &self.bar {
                bar.finish_and_clear();
            }
            eprintln!(
                "olm-guard: read {} of {} from {} in {:.2?}",
                crate::output::count(count, "object"),
                self.qualified,
                self.server,
                self.started.elapsed()
            );
        }
    }

    fn kind_of(resource: Resource) -> Kind {
        Kind {
            qualified: resource.qualified(),
            api_version: resource.api_version,
            kind: resource.kind,
            plural: resource.plural,
            namespaced: resource.namespaced,
        }
    }

    impl LiveArgs {
        /// Connects (reading the kubeconfig and the server's `/version`).
        pub fn session(&self) -> anyhow::Result<Session> {
            self.check_kubeconfig()?;
            let target = Target {
                kubeconfig: self.kubeconfig.clone(),
                context: self.context.clone(),
                timeout: self.request_timeout,
            };
            Ok(Session {
                live: Arc::new(Live::connect(&target)?),
            })
        }
    }

    impl Session {
        /// The server's URL.
        pub fn server(&self) -> String {
            self.live.server().to_string()
        }

        /// The host calls answered by the cluster; `fallback` answers for
        /// the kinds it does not serve.
        pub fn context(&self, fallback: Option<Snapshot>) -> LiveContext {
            LiveContext {
                cluster: Arc::new(LiveCluster::new(self.live.clone(), fallback)),
            }
        }

        /// The served kind `kind` of `api_version`, if served.
        pub fn kind(&self, api_version: &str, kind: &str) -> anyhow::Result<Option<Kind>> {
            Ok(self.live.resource(api_version, kind)?.map(kind_of))
        }

        /// The served resource `plural` of `api_version`, if served.
        pub fn kind_by_plural(
            &self,
            api_version: &str,
            plural: &str,
        ) -> anyhow::Result<Option<Kind>> {
            Ok(self
                .live
                .resource_by_plural(api_version, plural)?
                .map(kind_of))
        }

        /// Where an audit's reports go: `api_version`'s `kinds` (the
        /// namespaced kind and the cluster kind), which the server must
        /// serve.
        pub fn report_target(
            &self,
            api_version: &str,
            kinds: (&str, &str),
        ) -> anyhow::Result<ReportTarget> {
            let served = |kind: &str| -> anyhow::Result<olm_guard_live::Resource> {
                self.live.resource(api_version, kind)?.ok_or_else(|| {
                    anyhow::anyhow!(
                        "the API server {} does not serve {api_version} {kind}, which \
                         --write-reports writes: install its CRD first (openreports/reports-api \
                         config/crd, or wg-policy-prototypes' for --report-kind policyreport)",
                        self.server()
                    )
                })
            };
            let namespaced = served(kinds.0)?;
            let cluster = served(kinds.1)?;
            Ok(ReportTarget {
                kinds: vec![kind_of(namespaced.clone()), kind_of(cluster.clone())],
                resources: olm_guard_live::ReportKinds {
                    namespaced,
                    cluster,
                },
            })
        }

        /// Writes an audit's `reports` to `target`, then deletes the reports
        /// labelled `owner` of runs other than `run` (both `key=value`).
        pub fn write_reports(
            &self,
            target: &ReportTarget,
            reports: &[Value],
            owner: &str,
            run: &str,
        ) -> anyhow::Result<ReportsWritten> {
            Ok(self
                .live
                .write_reports(&target.resources, reports, owner, run)?
                .into())
        }

        /// Whether the kubeconfig's user may `verb` `resource` of `group`
        /// in every namespace (a SelfSubjectAccessReview).
        pub fn can_i(&self, verb: &str, group: &str, resource: &str) -> anyhow::Result<bool> {
            Ok(self.live.can_i(verb, group, resource)?)
        }

        /// Every object of `kind`, page by page, with their types.
        pub fn list(&self, kind: &Kind, page_size: u32) -> anyhow::Result<Vec<Value>> {
            let resource = self
                .live
                .resource(&kind.api_version, &kind.kind)?
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "the API server {} no longer serves {}",
                        self.server(),
                        kind.qualified
                    )
                })?;
            let progress = ListProgress::start(kind, &self.server());
            let listed = self
                .live
                .list_pages(&resource, page_size, &mut |read| progress.update(read))?;
            progress.finish(listed.objects.len());
            Ok(listed.objects)
        }
    }
}

#[cfg(not(feature = "live"))]
mod imp {
    use std::sync::Arc;

    use super::*;

    /// What a build without the `live` feature says of its flags.
    fn without_live() -> anyhow::Error {
        anyhow::anyhow!(
            "this olm-guard was built without live-cluster support (cargo feature `live`, which \
             `make examples` leaves out); build it with `cargo build -p olm-guard-host`, or read \
             the cluster from files with --cluster"
        )
    }

    /// A connection, which this build never makes ([`LiveArgs::session`]
    /// refuses).
    pub struct Session {
        _never: (),
    }

    /// A live context, which this build never makes.
    pub struct LiveContext {
        _never: (),
    }

    /// A report target, which this build never makes.
    pub struct ReportTarget {
        /// None.
        pub kinds: Vec<Kind>,
    }

    impl LiveContext {
        /// No cluster: every lookup fails closed.
        pub fn cluster(&self) -> ClusterContext {
            Arc::new(olm_guard_core::NoCluster)
        }

        /// Nothing was read, so nothing failed.
        pub fn failure(&self) -> Option<String> {
            None
        }

        /// Nothing to keep.
        pub fn seed(&self, _: &Kind, _: &[Value]) -> anyhow::Result<()> {
            Ok(())
        }
    }

    impl LiveArgs {
        /// Refuses: this build has no live-cluster support.
        pub fn session(&self) -> anyhow::Result<Session> {
            Err(without_live())
        }
    }

    impl Session {
        /// No server.
        pub fn server(&self) -> String {
            String::new()
        }

        /// No live context.
        pub fn context(&self, _: Option<Snapshot>) -> LiveContext {
            LiveContext { _never: () }
        }

        /// Refuses, as [`LiveArgs::session`] does.
        pub fn kind(&self, _: &str, _: &str) -> anyhow::Result<Option<Kind>> {
            Err(without_live())
        }

        /// Refuses, as [`LiveArgs::session`] does.
        pub fn kind_by_plural(&self, _: &str, _: &str) -> anyhow::Result<Option<Kind>> {
            Err(without_live())
        }

        /// Refuses, as [`LiveArgs::session`] does.
        pub fn list(&self, _: &Kind, _: u32) -> anyhow::Result<Vec<Value>> {
            Err(without_live())
        }

        /// Refuses, as [`LiveArgs::session`] does.
        pub fn report_target(&self, _: &str, _: (&str, &str)) -> anyhow::Result<ReportTarget> {
            Err(without_live())
        }

        /// Refuses, as [`LiveArgs::session`] does.
        pub fn write_reports(
            &self,
            _: &ReportTarget,
            _: &[Value],
            _: &str,
            _: &str,
        ) -> anyhow::Result<ReportsWritten> {
            Err(without_live())
        }

        /// Refuses, as [`LiveArgs::session`] does.
        pub fn can_i(&self, _: &str, _: &str, _: &str) -> anyhow::Result<bool> {
            Err(without_live())
        }
    }
}
