//! Apply conflicts and the 409 `Status` Kubernetes returns for them
//! (`k8s.io/apimachinery/pkg/util/managedfields/internal/conflict.go` behaviour).

use std::fmt;

use kplane_types::status::Details;
use kplane_types::{Cause, CauseType, Status, StatusReason};

use crate::fieldset::path_string;
use crate::managed::{ManagedFieldsEntry, Operation};

/// One field another manager owns and the apply would change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The owning manager's name.
    pub manager: String,
    pub operation: Operation,
    pub api_version: String,
    /// `""` for the main resource.
    pub subresource: String,
    /// The field, as upstream prints it (`.data.a`, `.spec.containers[name="x"].image`).
    pub field: String,
    /// The field as encoded path elements (`["f:data", "f:a"]`).
    pub path: Vec<String>,
}

impl Conflict {
    pub(crate) fn new(owner: &ManagedFieldsEntry, path: Vec<String>) -> Self {
        Conflict {
            manager: owner.manager.clone(),
            operation: owner.operation,
            api_version: owner.api_version.clone(),
            subresource: owner.subresource.clone(),
            field: path_string(&path),
            path,
        }
    }

    /// The manager as upstream prints it: `"m"` for an applier, `"m" using v1` for an
    /// updater, with ` with subresource "status"` after the name for subresource entries.
    pub fn manager_display(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            s = format!("{s} with subresource {:?}", self.subresource);
        }
        if self.operation == Operation::Update {
            s = format!("{s} using {}", self.api_version);
        }
        s
    }

    fn sort_key(&self) -> (&str, Operation, &str, &str) {
        (
            &self.manager,
            self.operation,
            &self.api_version,
            &self.subresource,
        )
    }
}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "conflict with {}: {}",
            self.manager_display(),
            self.field
        )
    }
}

/// Orders conflicts by owner, keeping each owner's fields in set order.
pub(crate) fn sort_conflicts(c: &mut [Conflict]) {
    c.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
}

/// The message upstream builds: `Apply failed with 1 conflict: conflict with "m" using v1:
/// .data.a`, or for several, `Apply failed with 2 conflicts: conflicts with "m":` followed
/// by `- <field>` lines per manager (managers sorted).
pub fn conflicts_message(conflicts: &[Conflict]) -> String {
    if let [one] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            one.manager_display(),
            one.field
        );
    }
    let mut sorted: Vec<&Conflict> = conflicts.iter().collect();
    sorted.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    let mut lines: Vec<String> = Vec::new();
    let mut last: Option<(&str, Operation, &str, &str)> = None;
    for c in sorted {
        if last != Some(c.sort_key()) {
            lines.push(format!("conflicts with {}:", c.manager_display()));
            last = Some(c.sort_key());
        }
        lines.push(format!("- {}", c.field));
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

/// The 409 Conflict `Status` for apply conflicts: one `FieldManagerConflict` cause per
/// field (`message: conflict with "m" using v1`, `field: .data.a`). Like upstream, the
/// details carry only the causes (no name, group or kind).
pub fn conflicts_status(conflicts: &[Conflict]) -> Status {
    let causes = conflicts
        .iter()
        .map(|c| {
            Cause::new(
                CauseType::FieldManagerConflict,
                c.field.clone(),
                format!("conflict with {}", c.manager_display()),
            )
        })
        .collect();
    Status::new(StatusReason::Conflict, conflicts_message(conflicts)).with_details(Details {
        causes,
        ..Default::default()
    })
}
