//! core/v1 ServiceAccount: only its stored form is particular.

use serde_json::Value;

use crate::catalog::ResourceType;
use crate::stored_form;
use crate::strategy::TypeStrategy;

#[derive(Debug)]
pub struct ServiceAccount;

#[async_trait::async_trait]
impl TypeStrategy for ServiceAccount {
    fn canonicalize(&self, _rt: &ResourceType, obj: &mut Value) {
        stored_form::service_account(obj);
    }
}
