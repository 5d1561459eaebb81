//! Reading a server's tool and resource lists page by page, within the host's bounds (pages,
//! items, bytes, time): all of a server's tools or an error naming the bound, never a part.

use std::collections::HashSet;
use std::future::Future;

use rmcp::model::PaginatedRequestParams;
use rmcp::ServiceError;
use serde_json::Value;

use super::errors::{service_challenge, with_tail};
#[cfg(doc)]
use super::options::ConnectOptions;
use super::options::{LIST_PAGE_TIMEOUT, MAX_LISTED_RESOURCES, MAX_LISTED_TOOLS, MAX_LIST_BYTES, MAX_LIST_PAGES};
use super::Connection;
use crate::error::{Error, Result};
use crate::ui_resource::ListedTool;

impl Connection {
    /// Re-reads the server's tools and resources (all pages, within the listing bounds: see
    /// [`ConnectOptions::list_timeout`] and [`MAX_LIST_BYTES`]). When the tools cannot be read
    /// whole, this is an error and the lists read before stay as they were.
    pub async fn refresh(&self) -> Result<()> {
        match self.list_all().await {
            Ok((tools, resources)) => {
                let tools = tools.into_iter().map(ListedTool::new).collect();
                *self.tools.write().unwrap_or_else(|e| e.into_inner()) = tools;
                *self.resources.write().unwrap_or_else(|e| e.into_inner()) = resources;
                Ok(())
            }
            Err(ListError::Service(e)) if service_challenge(&e).is_some() => Err(Error::AuthRequired {
                server: self.name.clone(),
                challenge: service_challenge(&e).unwrap_or_default(),
            }),
            Err(ListError::Service(e)) => Err(Error::Request {
                server: self.name.clone(),
                method: "tools/list".into(),
                reason: with_tail(&e.to_string(), &self.stderr_tail),
            }),
            Err(ListError::Stopped(reason)) => {
                Err(Error::Request { server: self.name.clone(), method: "tools/list".into(), reason })
            }
        }
    }

    /// Reads the tool and resource lists, page by page, within the bounds ([`MAX_LIST_PAGES`],
    /// [`MAX_LISTED_TOOLS`], [`MAX_LISTED_RESOURCES`], [`MAX_LIST_BYTES`], [`LIST_PAGE_TIMEOUT`]
    /// and [`ConnectOptions::list_timeout`] for both lists together). A server that wants
    /// sign-in only now may say so here.
    ///
    /// Tools past a bound are an error, not a shorter list: the host fails loudly rather than
    /// show part of a server's tools as if it were all of them (a tool that silently is not
    /// there looks like a server bug, and a model or View that needs it gets a confusing "no
    /// such tool"); the reason names the bound and what was read. Resources past a bound keep
    /// what was read, with a warning: UI resources need not be listed to be read, so the server
    /// stays usable. A repeated cursor ends a listing (what it points to was read already).
    async fn list_all(&self) -> std::result::Result<(Vec<Value>, Vec<Value>), ListError> {
        let deadline = tokio::time::Instant::now() + self.options.list_timeout;
        let tool_bounds = ListBounds { pages: MAX_LIST_PAGES, items: MAX_LISTED_TOOLS, bytes: MAX_LIST_BYTES };
        let mut tools = Pager::new("tools", tool_bounds);
        self.list_pages(&mut tools, deadline, |cursor| {
            let peer = self.peer.clone();
            async move {
                let page = peer.list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor))).await?;
                Ok((page.tools.iter().filter_map(|t| serde_json::to_value(t).ok()).collect(), page.next_cursor))
            }
        })
        .await?;
        let has_resources = self.peer.peer_info().is_some_and(|i| i.capabilities.resources.is_some());
        let resource_bounds = ListBounds { pages: MAX_LIST_PAGES, items: MAX_LISTED_RESOURCES, bytes: MAX_LIST_BYTES };
        let mut resources = Pager::new("resources", resource_bounds);
        if has_resources {
            let listed = self
                .list_pages(&mut resources, deadline, |cursor| {
                    let peer = self.peer.clone();
                    async move {
                        let page =
                            peer.list_resources(Some(PaginatedRequestParams::default().with_cursor(cursor))).await?;
                        let items = page.resources.iter().filter_map(|r| serde_json::to_value(r).ok()).collect();
                        Ok((items, page.next_cursor))
                    }
                })
                .await;
            if let Err(e) = listed {
                // UI resources need not be listed; reading them still works.
                let kept = resources.items.len();
                tracing::warn!(server = %self.name, "resources/list stopped: {e}; keeping the {kept} resources read");
            }
        }
        Ok((tools.items, resources.items))
    }

    /// Reads one list into `pager` until its last page, a bound, or `deadline`.
    async fn list_pages<F, Fut>(
        &self,
        pager: &mut Pager,
        deadline: tokio::time::Instant,
        mut fetch: F,
    ) -> std::result::Result<(), ListError>
    where
        F: FnMut(Option<String>) -> Fut,
        Fut: Future<Output = std::result::Result<(Vec<Value>, Option<String>), ServiceError>>,
    {
        let mut cursor = None;
        loop {
            let page_deadline = (tokio::time::Instant::now() + LIST_PAGE_TIMEOUT).min(deadline);
            // Dropping rmcp's request future on a timeout cancels the request at the server.
            let (items, next) = match tokio::time::timeout_at(page_deadline, fetch(cursor.take())).await {
                Ok(Ok(page)) => page,
                Ok(Err(e)) => return Err(ListError::Service(e)),
                Err(_) => {
                    let (page, limit) = (pager.pages + 1, self.options.list_timeout.as_secs_f32());
                    let reason = if page_deadline >= deadline {
                        format!("the listing did not finish within {limit} s (no answer to page {page} yet)")
                    } else {
                        format!("no answer to page {page} within {} s", LIST_PAGE_TIMEOUT.as_secs_f32())
                    };
                    // rmcp's stdio transport drops a line over its limit without a word to the caller.
                    let hint = if self.pid.is_some() {
                        "; over stdio, an answer of more than 16 MiB is dropped and never arrives"
                    } else {
                        ""
                    };
                    let seen = if pager.pages > 0 { format!("; {}", pager.seen()) } else { String::new() };
                    return Err(ListError::Stopped(format!("{reason}{hint}{seen}")));
                }
            };
            match pager.take(items, next) {
                Ok(Next::Page(next)) => cursor = Some(next),
                Ok(Next::Done) => return Ok(()),
                Ok(Next::RepeatedCursor) => {
                    tracing::warn!(server = %self.name, "{} listing ended at a repeated cursor; {}", pager.what, pager.seen());
                    return Ok(());
                }
                Err(reason) => return Err(ListError::Stopped(reason)),
            }
        }
    }
}

/// Why a listing ended early.
#[derive(Debug)]
enum ListError {
    /// The request failed (the error may carry a sign-in challenge).
    Service(ServiceError),
    /// A bound or a deadline was passed: the sentence says which, and what was read.
    Stopped(String),
}

impl std::fmt::Display for ListError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Service(e) => e.fmt(f),
            Self::Stopped(reason) => f.write_str(reason),
        }
    }
}

/// The bounds of one list.
#[derive(Debug, Clone, Copy)]
struct ListBounds {
    pages: usize,
    items: usize,
    bytes: usize,
}

/// What to do after a page.
#[derive(Debug, PartialEq, Eq)]
enum Next {
    /// Ask for the page of this cursor.
    Page(String),
    /// That was the last page.
    Done,
    /// The server named a cursor it named before: following it would read the same pages again.
    RepeatedCursor,
}

/// One list read page by page, within its bounds. Items are only ever kept within the bounds: the
/// item that would pass one is dropped with the rest of its page.
#[derive(Debug)]
struct Pager {
    /// `tools` or `resources`, for the sentences.
    what: &'static str,
    bounds: ListBounds,
    items: Vec<Value>,
    pages: usize,
    bytes: usize,
    cursors: HashSet<String>,
}

impl Pager {
    fn new(what: &'static str, bounds: ListBounds) -> Self {
        Self { what, bounds, items: Vec::new(), pages: 0, bytes: 0, cursors: HashSet::new() }
    }

    /// Takes one page; fails with a sentence naming the bound and what was read once it is passed.
    fn take(&mut self, page: Vec<Value>, next: Option<String>) -> std::result::Result<Next, String> {
        self.pages += 1;
        for item in page {
            if self.items.len() >= self.bounds.items {
                return Err(self.passed(&format!("{} {}", self.bounds.items, self.what)));
            }
            let size = json_size(&item);
            if self.bytes + size > self.bounds.bytes {
                return Err(self.passed(&format!("{} of listed data", bytes_text(self.bounds.bytes))));
            }
            self.bytes += size;
            self.items.push(item);
        }
        // An empty cursor is how some servers say "no more" (the spec says: leave it out).
        let Some(next) = next.filter(|c| !c.is_empty()) else { return Ok(Next::Done) };
        if self.cursors.contains(&next) {
            return Ok(Next::RepeatedCursor);
        }
        if self.bytes + next.len() > self.bounds.bytes {
            return Err(self.passed(&format!("{} of listed data", bytes_text(self.bounds.bytes))));
        }
        if self.pages >= self.bounds.pages {
            return Err(self.passed(&format!("{} pages", self.bounds.pages)));
        }
        self.bytes += next.len();
        self.cursors.insert(next.clone());
        Ok(Next::Page(next))
    }

    fn passed(&self, bound: &str) -> String {
        format!("the server's {} passed the host's bound of {bound}; {}", self.what, self.seen())
    }

    /// What was read so far, as a clause.
    fn seen(&self) -> String {
        let pages = if self.pages == 1 { "page" } else { "pages" };
        format!("read so far: {} {pages}, {} {}, {}", self.pages, self.items.len(), self.what, bytes_text(self.bytes))
    }
}

/// The size of a value's JSON, counted without building the text.
fn json_size(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Bytes for people: `16 MiB`, `3.2 MiB`, `512 KiB`, `12 bytes`.
fn bytes_text(bytes: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * 1024;
    match bytes {
        b if b >= MIB && b % MIB == 0 => format!("{} MiB", b / MIB),
        b if b >= MIB => format!("{:.1} MiB", b as f64 / MIB as f64),
        b if b >= KIB => format!("{} KiB", b / KIB),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools(page: usize, count: usize) -> Vec<Value> {
        (0..count).map(|i| json!({"name": format!("t{page}-{i}")})).collect()
    }

    #[test]
    fn pages_are_followed_until_the_last_one() {
        let mut pager = Pager::new("tools", ListBounds { pages: 10, items: 100, bytes: 1 << 20 });
        assert_eq!(pager.take(tools(0, 3), Some("c1".into())), Ok(Next::Page("c1".into())));
        assert_eq!(pager.take(tools(1, 3), Some("c2".into())), Ok(Next::Page("c2".into())));
        assert_eq!(pager.take(tools(2, 1), None), Ok(Next::Done));
        assert_eq!(pager.items.len(), 7);
        assert_eq!(pager.bytes, pager.items.iter().map(json_size).sum::<usize>() + 4, "cursors count too");
        assert_eq!(json_size(&json!({"name": "t0-0"})), serde_json::to_string(&json!({"name": "t0-0"})).unwrap().len());
        // An empty cursor ends a listing as an absent one does.
        let mut empty = Pager::new("tools", ListBounds { pages: 10, items: 100, bytes: 1 << 20 });
        assert_eq!(empty.take(tools(0, 1), Some(String::new())), Ok(Next::Done));
    }

    #[test]
    fn a_repeated_cursor_ends_the_listing() {
        let mut pager = Pager::new("tools", ListBounds { pages: 10, items: 100, bytes: 1 << 20 });
        assert_eq!(pager.take(tools(0, 1), Some("a".into())), Ok(Next::Page("a".into())));
        assert_eq!(pager.take(tools(1, 1), Some("b".into())), Ok(Next::Page("b".into())));
        assert_eq!(pager.take(tools(2, 1), Some("a".into())), Ok(Next::RepeatedCursor));
        assert_eq!(pager.items.len(), 3, "the last page still counts");
    }

    #[test]
    fn each_bound_stops_the_listing_with_what_was_read() {
        let mut pages = Pager::new("tools", ListBounds { pages: 2, items: 100, bytes: 1 << 20 });
        assert!(pages.take(tools(0, 1), Some("a".into())).is_ok());
        let err = pages.take(tools(1, 1), Some("b".into())).unwrap_err();
        assert_eq!(
            err,
            "the server's tools passed the host's bound of 2 pages; read so far: 2 pages, 2 tools, 31 bytes"
        );
        // The last page within the bounds is fine without a next cursor.
        let mut last = Pager::new("tools", ListBounds { pages: 1, items: 100, bytes: 1 << 20 });
        assert_eq!(last.take(tools(0, 1), None), Ok(Next::Done));

        let mut items = Pager::new("resources", ListBounds { pages: 10, items: 5, bytes: 1 << 20 });
        assert!(items.take(tools(0, 4), Some("a".into())).is_ok());
        let err = items.take(tools(1, 4), None).unwrap_err();
        assert!(
            err.starts_with(
                "the server's resources passed the host's bound of 5 resources; read so far: 2 pages, 5 resources"
            ),
            "{err}"
        );
        assert_eq!(items.items.len(), 5, "kept: everything within the bound");

        let mut bytes = Pager::new("tools", ListBounds { pages: 10, items: 100, bytes: 40 });
        let err = bytes.take(tools(0, 3), None).unwrap_err();
        assert_eq!(err, "the server's tools passed the host's bound of 40 bytes of listed data; read so far: 1 page, 2 tools, 30 bytes");
        let mut cursor = Pager::new("tools", ListBounds { pages: 10, items: 100, bytes: 40 });
        assert!(
            cursor.take(tools(0, 1), Some("x".repeat(100))).unwrap_err().contains("40 bytes"),
            "a huge cursor counts"
        );
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(bytes_text(MAX_LIST_BYTES), "8 MiB");
        assert_eq!(bytes_text(3 * 1024 * 1024 + 300 * 1024), "3.3 MiB");
        assert_eq!(bytes_text(2048), "2 KiB");
        assert_eq!(bytes_text(12), "12 bytes");
    }
}
