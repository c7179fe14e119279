//! Warnings collected while serving a request (deduplicated, as kube-apiserver does). The
//! HTTP layer sends them back as `Warning: 299 - "<text>"` headers with whatever response
//! the request gets, an error's too.

use std::sync::{Arc, Mutex};

/// A request's warnings; cheap to clone and share with the registry.
#[derive(Clone, Debug, Default)]
pub struct Warnings(Arc<Mutex<Vec<String>>>);

impl Warnings {
    pub fn push(&self, text: impl Into<String>) {
        let text = text.into();
        if let Ok(mut w) = self.0.lock() {
            if !w.contains(&text) {
                w.push(text);
            }
        }
    }

    /// The collected warnings, in the order they were first pushed.
    pub fn texts(&self) -> Vec<String> {
        self.0.lock().map(|w| w.clone()).unwrap_or_default()
    }

    /// The texts to send as `Warning` headers: [`Warnings::texts`] within kube-apiserver's
    /// limits (`endpoints/filters/warning.go`): while they add up to at most
    /// [`TOTAL_CHARS`] characters they are sent whole; once one would pass that, every text
    /// so far is cut to [`ITEM_CHARS`] characters, and later ones too, until the cut texts
    /// add up to [`TOTAL_CHARS`]; the rest are dropped. Empty texts are never sent.
    pub fn header_texts(&self) -> Vec<String> {
        limited(&self.texts())
    }
}

/// The most characters of warning text a response carries before texts are cut.
pub const TOTAL_CHARS: usize = 4 * 1024;
/// What a text is cut to once the total is passed.
pub const ITEM_CHARS: usize = 256;

fn cut(text: &str) -> (String, usize) {
    let n = text.chars().count();
    if n > ITEM_CHARS {
        (text.chars().take(ITEM_CHARS).collect(), ITEM_CHARS)
    } else {
        (text.to_string(), n)
    }
}

/// Replays kube-apiserver's warning recorder over `texts` (already deduplicated).
fn limited(texts: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut written = 0;
    let mut truncating = false;
    for (i, text) in texts.iter().enumerate() {
        if text.is_empty() || (truncating && written >= TOTAL_CHARS) {
            continue;
        }
        if truncating {
            let (t, n) = cut(text);
            written += n;
            out.push(t);
            continue;
        }
        let n = text.chars().count();
        if written + n <= TOTAL_CHARS {
            written += n;
            out.push(text.clone());
            continue;
        }
        // Past the total: every text so far (and this one) again, cut.
        truncating = true;
        written = 0;
        out.clear();
        for t in texts[..=i].iter().filter(|t| !t.is_empty()) {
            let (t, n) = cut(t);
            written += n;
            out.push(t);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(texts: &[String]) -> Vec<String> {
        let w = Warnings::default();
        for t in texts {
            w.push(t.clone());
        }
        w.header_texts()
    }

    #[test]
    fn warnings_within_the_total_are_sent_whole_and_once() {
        let long = "x".repeat(1000);
        let texts = vec![
            long.clone(),
            "a".into(),
            long.clone(),
            String::new(),
            "b".into(),
        ];
        assert_eq!(w(&texts), vec![long, "a".to_string(), "b".to_string()]);
    }

    #[test]
    fn past_the_total_every_warning_is_cut_and_the_rest_dropped() {
        // 4 of 1,000 characters fit (4,000); the fifth passes 4,096: all five are cut to
        // 256 (1,280), then more are cut and sent until the total reaches 4,096.
        let texts: Vec<String> = (0..30)
            .map(|i| format!("{i:02}{}", "é".repeat(998)))
            .collect();
        let got = w(&texts);
        assert!(got.iter().all(|t| t.chars().count() == ITEM_CHARS));
        assert_eq!(
            got[0],
            texts[0].chars().take(ITEM_CHARS).collect::<String>()
        );
        // 16 texts of 256 reach exactly 4,096; nothing after.
        assert_eq!(got.len(), 16);
        assert!(got[15].starts_with("15"));
    }

    #[test]
    fn a_text_exactly_at_the_total_is_sent_whole() {
        let texts = vec!["y".repeat(TOTAL_CHARS - 1), "z".into()];
        assert_eq!(w(&texts), texts);
        let texts = vec!["y".repeat(TOTAL_CHARS - 1), "zz".into()];
        assert_eq!(
            w(&texts),
            vec!["y".repeat(ITEM_CHARS), "zz".to_string()],
            "one character over: both cut"
        );
    }
}
