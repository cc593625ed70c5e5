//! An interrupted Pulumi update as driftd intents: each operation left in the state's
//! `pending_operations` is an intent of the stack's source, `interrupted`, held by the
//! stack's update. Its objects are what the operation applied, so a live object equal to
//! them reads `uncommitted` instead of an anonymous edit; its ways out are Pulumi's own,
//! because Pulumi's state, not driftd, is where the operation is recorded:
//!
//! - keep what reached the cluster: `pulumi refresh` reads the provider's state and clears
//!   pending operations; a pending create must be imported (`--import-pending-creates URN
//!   ID`) or it stays (pulumi `pkg/cmd/pulumi/operations/refresh.go`,
//!   `pkg/resource/deploy/deployment_executor.go` `printPendingOperationsWarning`);
//! - drop the record: `pulumi stack import` removes every pending operation of the
//!   deployment it imports (pulumi `pkg/cmd/pulumi/stack/io.go`, `SaveSnapshot`), so an
//!   export piped into an import clears them and changes nothing else.
//!
//! Where an intent's words are parsed back ([`Interrupted::parse`]): the holder names the
//! stack's update and its time, the message the operation, its resource and (when known)
//! the resource's id and the backend.

use super::{pending_objects, StackExport};
use crate::manifest::{LoadOptions, ManifestObject};
use crate::text::shell_quote;
use jiff::Timestamp;

/// Sources of stacks `driftd serve` reads from state directories: `pulumi:<project>/<stack>`.
pub const SOURCE_PREFIX: &str = "pulumi:";

/// Who revisions and intents read from Pulumi's state are by.
pub const ACTOR: &str = "pulumi";

const HOLDER_PREFIX: &str = "pulumi update of ";
const MESSAGE_PREFIX: &str = "pulumi: interrupted while ";
const ID_MARK: &str = "; id ";
const BACKEND_MARK: &str = "; backend ";

/// The source of a stack: `pulumi:<project>/<stack>`.
pub fn source_name(project: &str, stack: &str) -> String {
    format!("{SOURCE_PREFIX}{project}/{stack}")
}

/// (project, stack) of a Pulumi stack's source; `None` for any other source.
pub fn parse_source(source: &str) -> Option<(&str, &str)> {
    let (project, stack) = source.strip_prefix(SOURCE_PREFIX)?.split_once('/')?;
    (!project.is_empty() && !stack.is_empty() && !stack.contains('/')).then_some((project, stack))
}

/// The id pulumi-kubernetes gives an object: `namespace/name`, or the name of a
/// cluster-scoped object (pulumi-kubernetes `provider/pkg/provider/util.go`, `fqName`).
pub fn resource_id(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_string(),
    }
}

/// Each pending operation of `export` that changes the cluster, as an interrupted operation
/// of `stack` (as `pulumi --stack` takes it) with the object it applies (none for a
/// delete); `backend` is `file://<root>` when the state came from a file backend. What
/// cannot be one is said in the warnings: an object kube-apiserver would refuse (it never
/// reached the cluster), a resource that is no object of this stack (a `Patch`). The
/// update's time is the state's, else `now`.
pub fn operations(
    export: &StackExport,
    file: &str,
    options: &LoadOptions,
    stack: &str,
    backend: Option<&str>,
    now: Timestamp,
) -> (Vec<(Interrupted, Vec<ManifestObject>)>, Vec<String>) {
    let at = export.time.unwrap_or(now);
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    for (op, object) in pending_objects(export, file, options) {
        let object = match (object, op.skipped) {
            (Err(err), _) => {
                warnings.push(format!("{err}: not recorded as an interrupted operation"));
                continue;
            }
            (Ok(None), Some(reason)) => {
                warnings.push(format!(
                    "{file}: pending_operations[{}] ({}): {reason}: not recorded",
                    op.index, op.urn
                ));
                continue;
            }
            (Ok(object), _) => object,
        };
        let mut interrupted = Interrupted::new(stack, at, &op.operation, &op.urn);
        interrupted.backend = backend.map(str::to_string);
        if op.operation == "creating" {
            interrupted.id = object
                .as_ref()
                .map(|o| resource_id(o.key.namespace.as_deref(), &o.key.name));
        }
        out.push((interrupted, object.into_iter().collect()));
    }
    (out, warnings)
}

impl StackExport {
    /// The stack as `pulumi --stack` takes it: the checkpoint's name for it, else the stack
    /// of its URNs (resolved by Pulumi in the project's directory).
    pub fn command_stack(&self) -> Option<&str> {
        self.qualified_stack.as_deref().or(self.stack.as_deref())
    }
}

/// One operation of an update that did not finish, as an intent names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interrupted {
    /// The stack as `pulumi --stack` takes it (`organization/shop/dev` on a file backend).
    pub stack: String,
    /// When Pulumi last wrote the state with the operation pending, to the second.
    pub at: Timestamp,
    /// `creating`, `updating`, `deleting`, `importing`.
    pub operation: String,
    pub urn: String,
    /// The resource's id when the operation creates it: what `--import-pending-creates`
    /// needs.
    pub id: Option<String>,
    /// `file://<root>` when the state was read from a file backend.
    pub backend: Option<String>,
}

impl Interrupted {
    pub fn new(stack: &str, at: Timestamp, operation: &str, urn: &str) -> Interrupted {
        Interrupted {
            stack: stack.to_string(),
            at: Timestamp::from_second(at.as_second()).unwrap_or(at),
            operation: operation.to_string(),
            urn: urn.to_string(),
            id: None,
            backend: None,
        }
    }

    /// `pulumi update of organization/shop/dev at 2024-05-14T07:12:58Z`: every operation of
    /// one update has the same holder.
    pub fn holder(&self) -> String {
        format!("{HOLDER_PREFIX}{} at {}", self.stack, self.at)
    }

    /// `pulumi: interrupted while updating urn:...` (Pulumi's own words for it), then the id
    /// and the backend when known.
    pub fn message(&self) -> String {
        let mut text = format!("{MESSAGE_PREFIX}{} {}", self.operation, self.urn);
        if let Some(id) = &self.id {
            text.push_str(&format!("{ID_MARK}{id}"));
        }
        if let Some(backend) = &self.backend {
            text.push_str(&format!("{BACKEND_MARK}{backend}"));
        }
        text
    }

    /// The operation an intent with this holder and message stands for.
    pub fn parse(holder: &str, message: &str) -> Option<Interrupted> {
        let (stack, at) = holder.strip_prefix(HOLDER_PREFIX)?.rsplit_once(" at ")?;
        let rest = message.strip_prefix(MESSAGE_PREFIX)?;
        let (rest, backend) = match rest.rsplit_once(BACKEND_MARK) {
            Some((rest, backend)) => (rest, Some(backend.to_string())),
            None => (rest, None),
        };
        let (rest, id) = match rest.rsplit_once(ID_MARK) {
            Some((rest, id)) => (rest, Some(id.to_string())),
            None => (rest, None),
        };
        let (operation, urn) = rest.split_once(' ')?;
        if stack.is_empty() || !urn.starts_with("urn:pulumi:") {
            return None;
        }
        Some(Interrupted {
            stack: stack.to_string(),
            at: at.parse().ok()?,
            operation: operation.to_string(),
            urn: urn.to_string(),
            id,
            backend,
        })
    }

    /// Whether `other` is the same operation on the same resource (it may have been
    /// recorded by a later write of the state).
    pub fn same_operation(&self, other: &Interrupted) -> bool {
        self.operation == other.operation && self.urn == other.urn
    }

    /// `pulumi ...` with the backend it must reach.
    fn pulumi(&self, args: &str) -> String {
        let env = match &self.backend {
            Some(url) => format!("PULUMI_BACKEND_URL={} ", shell_quote(url)),
            None => String::new(),
        };
        format!("{env}pulumi {args} --stack {}", shell_quote(&self.stack))
    }

    /// Keeps what reached the cluster: Pulumi's state takes the cluster's.
    pub fn keep_command(&self) -> String {
        match (self.operation.as_str(), &self.id) {
            ("creating", Some(id)) => format!(
                "{} --import-pending-creates {} {}",
                self.pulumi("refresh --yes"),
                shell_quote(&self.urn),
                shell_quote(id)
            ),
            // Pulumi asks what to do with each pending create when run interactively.
            ("creating", None) => self.pulumi("refresh"),
            _ => self.pulumi("refresh --yes"),
        }
    }

    /// Drops the record of the operation and nothing else: an export imported back.
    pub fn clear_command(&self) -> String {
        format!(
            "{} | {}",
            self.pulumi("stack export"),
            self.pulumi("stack import")
        )
    }

    /// Why it stands, for `/locks`, with the way out that keeps the change.
    pub fn reason(&self) -> String {
        let create = if self.operation == "creating" {
            "; a pending create stays until it is imported or cleared"
        } else {
            ""
        };
        format!(
            "the update of stack {} at {} was interrupted while {} {}: Pulumi's state still \
             records the operation as pending (every `pulumi up` warns about it{create}). \
             To keep what reached the cluster: `{}`; to drop it, undo the change (driftd \
             drift --source ...) and clear the record",
            self.stack,
            self.at,
            self.operation,
            self.urn,
            self.keep_command()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update() -> Interrupted {
        Interrupted::new(
            "organization/shop/dev",
            "2024-05-14T09:12:58.20441+02:00".parse().unwrap(),
            "updating",
            "urn:pulumi:dev::shop::kubernetes:apps/v1:Deployment::web",
        )
    }

    #[test]
    fn holder_and_message_name_the_update_and_parse_back() {
        let mut op = update();
        assert_eq!(
            op.holder(),
            "pulumi update of organization/shop/dev at 2024-05-14T07:12:58Z"
        );
        assert_eq!(
            op.message(),
            "pulumi: interrupted while updating urn:pulumi:dev::shop::kubernetes:apps/v1:Deployment::web"
        );
        assert_eq!(
            Interrupted::parse(&op.holder(), &op.message()),
            Some(op.clone())
        );
        op.operation = "creating".into();
        op.id = Some("shop/web".into());
        op.backend = Some("file:///srv/pulumi state".into());
        assert_eq!(
            Interrupted::parse(&op.holder(), &op.message()),
            Some(op.clone())
        );
        assert_eq!(
            Interrupted::parse("alice@laptop (pid 4)", &op.message()),
            None
        );
        assert_eq!(Interrupted::parse(&op.holder(), "deploy web 1.4.2"), None);
    }

    #[test]
    fn the_ways_out_are_pulumi_commands_for_the_stack() {
        let mut op = update();
        assert_eq!(
            op.keep_command(),
            "pulumi refresh --yes --stack organization/shop/dev"
        );
        assert_eq!(
            op.clear_command(),
            "pulumi stack export --stack organization/shop/dev | \
             pulumi stack import --stack organization/shop/dev"
        );
        op.operation = "creating".into();
        op.backend = Some("file:///srv/pulumi state".into());
        assert_eq!(
            op.keep_command(),
            "PULUMI_BACKEND_URL='file:///srv/pulumi state' pulumi refresh --stack organization/shop/dev",
            "without the id, Pulumi asks"
        );
        op.id = Some("shop/web".into());
        assert_eq!(
            op.keep_command(),
            "PULUMI_BACKEND_URL='file:///srv/pulumi state' pulumi refresh --yes --stack \
             organization/shop/dev --import-pending-creates \
             urn:pulumi:dev::shop::kubernetes:apps/v1:Deployment::web shop/web"
        );
        assert!(
            op.reason().contains("a pending create stays"),
            "{}",
            op.reason()
        );
    }

    #[test]
    fn each_pending_operation_is_one_with_the_object_it_applies() {
        let text = include_str!(
            "../../../../tests/fixtures/pulumi/interrupted/state/.pulumi/stacks/shop/dev.json"
        );
        let export = super::super::parse_stack_export(text, "dev.json").unwrap();
        let now = Timestamp::UNIX_EPOCH;
        let (ops, warnings) = operations(
            &export,
            "dev.json",
            &LoadOptions::default(),
            export.command_stack().unwrap(),
            Some("file:///srv/pulumi"),
            now,
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        let [(op, objects)] = &ops[..] else {
            panic!("{ops:?}")
        };
        assert_eq!(
            op.holder(),
            "pulumi update of organization/shop/dev at 2026-11-30T10:40:03Z"
        );
        assert_eq!(
            op.message(),
            "pulumi: interrupted while creating \
             urn:pulumi:dev::shop::kubernetes:core/v1:ConfigMap::web-flags; \
             id shop/web-flags-5d1e9c2a; backend file:///srv/pulumi"
        );
        assert_eq!(
            objects[0].key.to_string(),
            "ConfigMap shop/web-flags-5d1e9c2a"
        );
    }

    #[test]
    fn source_names_and_resource_ids() {
        assert_eq!(source_name("shop", "dev"), "pulumi:shop/dev");
        assert_eq!(parse_source("pulumi:shop/dev"), Some(("shop", "dev")));
        assert_eq!(parse_source("pulumi:shop"), None);
        assert_eq!(parse_source("helm:shop/web"), None);
        // pulumi-kubernetes util.go fqName: "namespace/name", or the name alone.
        assert_eq!(resource_id(Some("shop"), "web"), "shop/web");
        assert_eq!(resource_id(None, "letsencrypt"), "letsencrypt");
    }
}
