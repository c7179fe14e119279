//! `kplane certs issue`: mints a client certificate with the client CA of a data directory
//! (the CA `kplane serve` creates in `<data-dir>/pki` on first start; created here if the
//! server has not run yet). The certificate's CN is the user name and each O a group, which
//! is what the server's client-certificate authenticator reads.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

/// The `kplane certs` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum CertsCommand {
    /// Issue a client certificate (CN = user, O = groups) signed by the client CA.
    Issue(IssueArgs),
}

#[derive(clap::Args, Debug)]
pub struct IssueArgs {
    /// The server's data directory (its `pki/client-ca.{crt,key}` sign the certificate).
    #[arg(long, default_value = "./kplane-data", env = "KPLANE_DATA_DIR")]
    data_dir: PathBuf,
    /// The user name (the certificate's common name).
    #[arg(long)]
    user: String,
    /// A group (an organization of the certificate); repeat for several.
    #[arg(long = "group")]
    groups: Vec<String>,
    /// How many days the certificate is valid.
    #[arg(long, default_value_t = 365)]
    days: u64,
    /// Directory to write `<user>.crt` and `<user>.key` into.
    #[arg(short = 'o', long = "output-dir", default_value = ".")]
    output_dir: PathBuf,
}

/// Runs a `kplane certs` command.
pub fn run(command: CertsCommand) -> anyhow::Result<()> {
    match command {
        CertsCommand::Issue(args) => issue(args),
    }
}

fn issue(args: IssueArgs) -> anyhow::Result<()> {
    if args.user.is_empty() {
        anyhow::bail!("--user must not be empty");
    }
    if args.days == 0 {
        anyhow::bail!("--days must be at least 1");
    }
    let pki = args.data_dir.join("pki");
    let ca = kplane_apiserver::client_ca::load_or_create(&pki)
        .with_context(|| format!("loading the client CA in {}", pki.display()))?;
    let signer = ca.signer.context("the client CA has no key to sign with")?;
    let cert = kplane_apiserver::client_ca::issue(
        &signer,
        &args.user,
        &args.groups,
        Duration::from_secs(args.days * 24 * 3600),
    )
    .context("issuing the certificate")?;
    std::fs::create_dir_all(&args.output_dir)
        .with_context(|| format!("creating {}", args.output_dir.display()))?;
    let file = sanitize(&args.user);
    let crt = args.output_dir.join(format!("{file}.crt"));
    let key = args.output_dir.join(format!("{file}.key"));
    std::fs::write(&crt, &cert.cert_pem).with_context(|| format!("writing {}", crt.display()))?;
    write_private(&key, &cert.key_pem)?;
    println!("{}\n{}", crt.display(), key.display());
    Ok(())
}

/// A file name for a user name (`system:node:a` → `system_node_a`).
fn sanitize(user: &str) -> String {
    user.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn write_private(path: &std::path::Path, contents: &str) -> anyhow::Result<()> {
    std::fs::write(path, contents).with_context(|| format!("writing {}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("chmod {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_of_users() {
        assert_eq!(sanitize("alice"), "alice");
        assert_eq!(sanitize("system:node:a/b"), "system_node_a_b");
    }
}
