//! The create-only reviews (access reviews, token reviews, SelfSubjectReview): computed
//! from the request by the HTTP layer, never stored, so no write path, no managedFields
//! and no bulk delete.

use crate::strategy::TypeStrategy;

#[derive(Debug)]
pub struct Review;

#[async_trait::async_trait]
impl TypeStrategy for Review {
    fn is_stored(&self) -> bool {
        false
    }

    fn deletes_in_bulk(&self) -> bool {
        false
    }
}
