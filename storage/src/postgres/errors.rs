//! PostgreSQL's and the connection pool's errors as this crate's ([`pg_err`],
//! [`pool_err`]): what retrying may fix is [`Error::Timeout`], the rest
//! [`Error::Backend`].

use crate::Error;

/// Maps a PostgreSQL error. What retrying may fix is [`Error::Timeout`] ("may have been
/// applied or not; retrying may succeed", a 504 with Retry-After for clients): a cancelled
/// statement, a lock timeout, a lost or refused connection, a server shutting down, a
/// serialization failure or deadlock. Everything else is [`Error::Backend`].
pub(crate) fn pg_err(e: tokio_postgres::Error) -> Error {
    use tokio_postgres::error::SqlState;
    let Some(db) = e.as_db_error() else {
        // No answer from the server: the connection broke, closed or never opened.
        let mut text = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(cause) = source {
            text.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        return Error::Timeout(format!("no answer from the database: {text}"));
    };
    let code = db.code();
    let retryable = [
        SqlState::QUERY_CANCELED,
        SqlState::LOCK_NOT_AVAILABLE,
        SqlState::ADMIN_SHUTDOWN,
        SqlState::CRASH_SHUTDOWN,
        SqlState::CANNOT_CONNECT_NOW,
        SqlState::T_R_SERIALIZATION_FAILURE,
        SqlState::T_R_DEADLOCK_DETECTED,
        SqlState::TOO_MANY_CONNECTIONS,
        // A standby (an address without `target_session_attrs=read-write`): nothing was
        // written, and the primary may take the retry.
        SqlState::READ_ONLY_SQL_TRANSACTION,
    ];
    let class = &code.code()[..2.min(code.code().len())];
    if retryable.contains(code) || class == "08" {
        return Error::Timeout(format!("database: {}: {}", code.code(), db.message()));
    }
    Error::Backend(format!("postgres: {}: {}", code.code(), db.message()))
}

pub(crate) fn pool_err(e: deadpool_postgres::PoolError) -> Error {
    match e {
        deadpool_postgres::PoolError::Timeout(t) => {
            Error::Timeout(format!("no database connection ({t:?})"))
        }
        deadpool_postgres::PoolError::Backend(e) => pg_err(e),
        other => Error::Backend(format!("postgres pool: {other}")),
    }
}
