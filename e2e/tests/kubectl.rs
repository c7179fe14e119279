//! The real kubectl (1.32 via the version dispatcher) against kplane.

mod create;
mod delete;
mod discovery;
mod errors;
mod events;
mod get;
mod jobs;
mod modify;
mod network_policies;
mod pod_templates;
mod root_ca;
mod status;
mod stored_form;
mod version;
mod volume_claims;

use anyhow::{Context as _, Result};
use kplane_e2e::KplaneServer;
use serde_json::Value;

/// `kubectl <args> -o json`, parsed.
fn get_json(server: &KplaneServer, args: &[&str]) -> Result<Value> {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    let out = server.kubectl_ok(&all)?;
    serde_json::from_str(&out).with_context(|| format!("kubectl output is not JSON: {out}"))
}
