//! Dispatch peers (filled in by the peer work).
