//! End-to-end tests: every test starts its own `kplane serve` (see `kplane_e2e::KplaneServer`)
//! and drives it with real clients, kubectl, kube-rs and the official Python client. This file
//! only declares modules.

mod archive;
mod archive_server;
mod audit;
mod authn;
mod backups;
mod clusters;
mod crash;
mod crds;
mod deploy;
mod docs;
mod failover;
mod gc;
mod in_cluster;
mod kube_rs;
mod kube_rs_crd;
mod kubectl;
mod large_lists;
mod logs;
mod oidc;
mod postgres;
mod python;
mod rbac;
mod rbac_aggregation;
mod rbac_defaults;
mod rbac_users;
mod replicas;
mod sa_tokens;
mod shutdown;
mod ssa;
mod sync_controllers;
mod sync_endpoint;
mod sync_target;
mod syncer;
mod syncer_api_access;
mod syncer_bench;
mod syncer_policies;
mod syncer_status;
mod templates;
mod wildcard;
mod workspace_lifecycle;
mod workspaces;
mod ws_cli;
mod ws_move;
mod ws_move_bench;
