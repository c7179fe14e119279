//! The static token file (`--token-auth-file`, kube-apiserver's `tokenfile` authenticator):
//! a CSV file of `token,user,uid[,"group1,group2"]` records, read once at start-up. A
//! bearer token found in it is that user; any other token is not its business (the chain
//! answers 401 when no authenticator knows a presented token).

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use kplane_types::UserInfo;

use super::auth::{AuthOutcome, AuthRequest, Authenticator};

/// Why a token file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error("reading token file '{path}': {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("token file '{path}': {message}")]
    Format { path: String, message: String },
}

/// The users of a static token file, by token.
pub struct TokenFileAuthenticator {
    tokens: HashMap<String, UserInfo>,
}

impl fmt::Debug for TokenFileAuthenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenFileAuthenticator")
            .field("tokens", &self.tokens.len())
            .finish()
    }
}

impl TokenFileAuthenticator {
    /// Reads the CSV file at `path`.
    pub fn from_file(path: &Path) -> Result<Self, TokenFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| TokenFileError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text).map_err(|message| TokenFileError::Format {
            path: path.display().to_string(),
            message,
        })
    }

    /// Parses the file's text: at least three columns per record (token, user name, uid),
    /// the fourth a comma-separated group list; records with an empty token are skipped and
    /// a later duplicate token wins, as upstream (both with a warning).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut tokens = HashMap::new();
        for (n, record) in csv_records(text)?.into_iter().enumerate() {
            if record.len() < 3 {
                return Err(format!(
                    "must have at least 3 columns (token, user name, user uid), found {}",
                    record.len()
                ));
            }
            let number = n + 1;
            if record[0].is_empty() {
                tracing::warn!(record = number, "empty token in the token file");
                continue;
            }
            let groups = record
                .get(3)
                .map(|g| {
                    g.split(',')
                        .filter(|g| !g.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            let user = UserInfo {
                username: record[1].clone(),
                uid: record[2].clone(),
                groups,
                extra: Default::default(),
            };
            if tokens.insert(record[0].clone(), user).is_some() {
                tracing::warn!(record = number, "duplicate token in the token file");
            }
        }
        Ok(TokenFileAuthenticator { tokens })
    }
}

#[async_trait::async_trait]
impl Authenticator for TokenFileAuthenticator {
    async fn authenticate(&self, req: &AuthRequest<'_>) -> AuthOutcome {
        match req.bearer_token.and_then(|t| self.tokens.get(t)) {
            Some(user) => AuthOutcome::Authenticated(user.clone()),
            None => AuthOutcome::NotApplicable,
        }
    }
}

/// The records of a CSV text (RFC 4180 as Go's `encoding/csv` reads it: fields separated by
/// commas, double-quoted fields may hold commas, newlines and doubled quotes; blank lines
/// are skipped; a quote inside an unquoted field is an error).
fn csv_records(text: &str) -> Result<Vec<Vec<String>>, String> {
    let mut records = Vec::new();
    let mut record: Vec<String> = Vec::new();
    let mut field = String::new();
    let mut line = 1;
    let mut chars = text.chars().peekable();
    // Whether the current record has any content yet (blank lines are no records).
    let mut started = false;
    while let Some(c) = chars.next() {
        match c {
            '"' if field.is_empty() => {
                started = true;
                loop {
                    match chars.next() {
                        Some('"') if chars.peek() == Some(&'"') => {
                            chars.next();
                            field.push('"');
                        }
                        Some('"') => break,
                        Some(c) => {
                            if c == '\n' {
                                line += 1;
                            }
                            field.push(c);
                        }
                        None => {
                            return Err(format!(
                                "line {line}: extraneous or missing \" in quoted-field"
                            ))
                        }
                    }
                }
                match chars.peek() {
                    None | Some(',') | Some('\n') | Some('\r') => {}
                    Some(_) => {
                        return Err(format!(
                            "line {line}: extraneous or missing \" in quoted-field"
                        ))
                    }
                }
            }
            '"' => return Err(format!("line {line}: bare \" in non-quoted-field")),
            ',' => {
                started = true;
                record.push(std::mem::take(&mut field));
            }
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                line += 1;
                if started || !field.is_empty() {
                    record.push(std::mem::take(&mut field));
                    records.push(std::mem::take(&mut record));
                }
                started = false;
            }
            c => {
                started = true;
                field.push(c);
            }
        }
    }
    if started || !field.is_empty() {
        record.push(field);
        records.push(record);
    }
    Ok(records)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn csv_as_go_reads_it() {
        let r =
            csv_records("a,b,c\n\n\"x,y\",\"say \"\"hi\"\"\",\r\nlast,\"multi\nline\"").unwrap();
        assert_eq!(
            r,
            vec![
                vec!["a", "b", "c"],
                vec!["x,y", "say \"hi\"", ""],
                vec!["last", "multi\nline"],
            ]
        );
        assert!(csv_records("a,b\"c\n").is_err());
        assert!(csv_records("\"open,b\n").is_err());
        assert!(csv_records("\"a\"b,c\n").is_err());
    }

    #[tokio::test]
    async fn tokens_are_users() {
        let a = TokenFileAuthenticator::parse(
            "t1,alice,u1,\"dev,ops\"\nt2,bob,u2\n,nobody,u3\nt3,carol,u4,\n",
        )
        .unwrap();
        let user = |t: &'static str| {
            let a = &a;
            async move {
                match a.authenticate(&AuthRequest::token(t)).await {
                    AuthOutcome::Authenticated(u) => Some(u),
                    _ => None,
                }
            }
        };
        let alice = user("t1").await.unwrap();
        assert_eq!(
            (alice.username.as_str(), alice.uid.as_str()),
            ("alice", "u1")
        );
        assert_eq!(alice.groups, ["dev", "ops"]);
        let bob = user("t2").await.unwrap();
        assert!(bob.groups.is_empty());
        assert!(user("t3").await.unwrap().groups.is_empty());
        assert_eq!(user("").await, None);
        assert_eq!(user("t4").await, None);
        let err = TokenFileAuthenticator::parse("t1,alice\n").unwrap_err();
        assert_eq!(
            err,
            "must have at least 3 columns (token, user name, user uid), found 2"
        );
    }
}
