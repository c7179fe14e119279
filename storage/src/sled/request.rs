//! What a write asks the writer thread ([`WriteRequest`]), and how many such writes it
//! commits together at most ([`MAX_WRITE_GROUP`]).

use tokio::sync::oneshot;

use crate::{Encoder, Key, KeyValue, Precondition, Result};

/// Upper bound on the writes committed together (one sled batch, one flush), except that a
/// [`crate::Storage::write_batch`] chunk is never split: a group is at most twice this.
pub const MAX_WRITE_GROUP: usize = 8192;

pub(crate) struct WriteRequest {
    pub key: Key,
    pub delete: bool,
    pub precondition: Precondition,
    pub encode: Encoder,
    pub reply: oneshot::Sender<Result<KeyValue>>,
}
