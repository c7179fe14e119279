//! End-to-end test support: starts the real `kplane` binary and drives it with real clients.
