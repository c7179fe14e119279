//! Parsing kubectl's human-readable (tabwriter-aligned) table output.
//!
//! Columns start where the header has a word preceded by at least two spaces (kubectl pads with
//! three), so multi-word headers like `LAST SEEN` stay one column, and empty cells (a Job's
//! `DURATION` while it runs) are read as empty strings.

use anyhow::{bail, Context as _, Result};

/// One table printed by `kubectl get` (a single resource type).
#[derive(Debug, Clone)]
pub struct Table {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// Parses the first table in `text` (up to the first blank line after the header).
    pub fn parse(text: &str) -> Result<Self> {
        let mut lines = text.lines().skip_while(|l| l.trim().is_empty());
        let header: Vec<char> = lines.next().context("no table header")?.chars().collect();
        let starts: Vec<usize> = (0..header.len())
            .filter(|&i| {
                header[i] != ' '
                    && (i == 0 || (i >= 2 && header[i - 1] == ' ' && header[i - 2] == ' '))
            })
            .collect();
        if starts.first() != Some(&0) {
            bail!(
                "table header does not start at column 0: {:?}",
                header.iter().collect::<String>()
            );
        }
        let cells = |line: &[char]| -> Vec<String> {
            starts
                .iter()
                .enumerate()
                .map(|(n, &from)| {
                    let to = starts
                        .get(n + 1)
                        .copied()
                        .unwrap_or(line.len())
                        .min(line.len());
                    line.get(from.min(to)..to)
                        .unwrap_or_default()
                        .iter()
                        .collect::<String>()
                        .trim()
                        .to_owned()
                })
                .collect()
        };
        let headers = cells(&header);
        let rows = lines
            .take_while(|l| !l.trim().is_empty())
            .map(|l| cells(&l.chars().collect::<Vec<_>>()))
            .collect();
        Ok(Self { headers, rows })
    }

    /// The index of the column named `name`.
    pub fn column(&self, name: &str) -> Result<usize> {
        self.headers
            .iter()
            .position(|h| h == name)
            .with_context(|| format!("no column {name:?} in {:?}", self.headers))
    }

    /// The row whose column `key` equals `value`.
    pub fn row(&self, key: &str, value: &str) -> Result<&[String]> {
        let k = self.column(key)?;
        self.rows
            .iter()
            .find(|r| r[k] == value)
            .map(Vec::as_slice)
            .with_context(|| format!("no row with {key}={value:?} in {self:?}"))
    }

    /// The cell in column `column` of the row whose column `key` equals `value`.
    pub fn cell(&self, key: &str, value: &str, column: &str) -> Result<&str> {
        let c = self.column(column)?;
        Ok(&self.row(key, value)?[c])
    }

    /// All values of column `name`.
    pub fn values(&self, name: &str) -> Result<Vec<&str>> {
        let c = self.column(name)?;
        Ok(self.rows.iter().map(|r| r[c].as_str()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::Table;

    #[test]
    fn parses_aligned_columns_with_empty_cells_and_multiword_headers() -> anyhow::Result<()> {
        let t = Table::parse(
            "NAME           STATUS    COMPLETIONS   DURATION   AGE\n\
             job.batch/j1   Running   0/1                      0s\n",
        )?;
        assert_eq!(
            t.headers,
            ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
        );
        assert_eq!(t.cell("NAME", "job.batch/j1", "DURATION")?, "");
        assert_eq!(t.cell("NAME", "job.batch/j1", "COMPLETIONS")?, "0/1");
        let t = Table::parse(
            "LAST SEEN   TYPE     REASON   OBJECT         MESSAGE\n\
             2s          Normal   Synced   configmap/x    all is well now\n",
        )?;
        assert_eq!(t.cell("REASON", "Synced", "MESSAGE")?, "all is well now");
        assert_eq!(t.cell("REASON", "Synced", "LAST SEEN")?, "2s");
        Ok(())
    }
}
