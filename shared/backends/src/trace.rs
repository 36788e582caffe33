//! W3C trace context (`traceparent`) carried across processes: a request's trace goes
//! with everything it queues — outbox rows (in the envelope), deliveries — and is
//! continued where those are handled, so one request can be followed from the api through
//! the worker to the notifier and into the callback it sends (`traceparent` header).
//!
//! The context of the work under way is task-local: the api sets it per request (from the
//! caller's `traceparent` or a new trace), the consumer runner per message and the
//! notifier per delivery attempt; [`current`] reads it where something is queued. Spans
//! carry the trace id as `trace_id`, so the logs of all processes can be joined on it.

use std::fmt;
use std::future::Future;

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use rand::RngCore;
use tracing_opentelemetry::OpenTelemetrySpanExt;

tokio::task_local! {
    static CURRENT: TraceContext;
}

/// A position in a trace: the trace, the span that caused what comes next, and whether the
/// caller samples it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceContext {
    trace_id: u128,
    parent_id: u64,
    sampled: bool,
}

impl TraceContext {
    /// The start of a new trace (sampled).
    pub fn root() -> TraceContext {
        TraceContext { trace_id: nonzero_u128(), parent_id: nonzero_u64(), sampled: true }
    }

    /// A `traceparent` header value: version `00` (and later versions read as `00`, as the
    /// recommendation says), ids in lower-case hex and not all zeros. `None` when invalid.
    pub fn parse(header: &str) -> Option<TraceContext> {
        let header = header.trim();
        let mut parts = header.split('-');
        let (version, trace, parent, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        let lower_hex =
            |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !lower_hex(version, 2) || version == "ff" || (version == "00" && parts.next().is_some()) {
            return None;
        }
        if !lower_hex(trace, 32) || !lower_hex(parent, 16) || !lower_hex(flags, 2) {
            return None;
        }
        let trace_id = u128::from_str_radix(trace, 16).ok().filter(|id| *id != 0)?;
        let parent_id = u64::from_str_radix(parent, 16).ok().filter(|id| *id != 0)?;
        let sampled = u8::from_str_radix(flags, 16).ok()? & 1 == 1;
        Some(TraceContext { trace_id, parent_id, sampled })
    }

    /// The same trace under a new span of ours.
    pub fn child(self) -> TraceContext {
        TraceContext { parent_id: nonzero_u64(), ..self }
    }

    /// The trace id: 32 lower-case hex digits.
    pub fn trace_id(self) -> String {
        format!("{:032x}", self.trace_id)
    }

    /// Runs `work` with this context as the current one.
    pub async fn scope<F: Future>(self, work: F) -> F::Output {
        CURRENT.scope(self, work).await
    }
}

/// The `traceparent` header value.
impl fmt::Display for TraceContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "00-{:032x}-{:016x}-{:02x}", self.trace_id, self.parent_id, u8::from(self.sampled))
    }
}

/// The context of the work under way, if it runs in one.
pub fn current() -> Option<TraceContext> {
    CURRENT.try_with(|context| *context).ok()
}

/// The `traceparent` to give what the work under way queues: a child of the current
/// context. When spans are exported (OpenTelemetry), its parent is the span under way,
/// so that the collector shows one tree from the request to the callback.
pub fn traceparent_to_queue() -> Option<String> {
    let context = current()?;
    let exported = tracing::Span::current().context().span().span_context().clone();
    let next = if exported.is_valid() && exported.trace_id().to_bytes() == context.trace_id.to_be_bytes() {
        TraceContext { parent_id: u64::from_be_bytes(exported.span_id().to_bytes()), ..context }
    } else {
        context.child()
    };
    Some(next.to_string())
}

/// Makes `span` a child of `parent` (the caller's span, or the span that queued the
/// work) for the spans exported to an OpenTelemetry collector, so that they carry the
/// trace id the logs show. Without an exporter it does nothing.
pub fn attach(span: &tracing::Span, parent: TraceContext) {
    let remote = SpanContext::new(
        TraceId::from_bytes(parent.trace_id.to_be_bytes()),
        SpanId::from_bytes(parent.parent_id.to_be_bytes()),
        if parent.sampled { TraceFlags::SAMPLED } else { TraceFlags::default() },
        true,
        TraceState::default(),
    );
    let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(remote));
}

/// A new envelope for `message`, in the trace of the work under way (if any).
pub fn envelope(message: reelfarm_domain::message::Message) -> reelfarm_domain::message::Envelope {
    reelfarm_domain::message::Envelope::new(message, traceparent_to_queue())
}

/// Continues a stored `traceparent` (its child; a new trace when there is none, for work
/// queued before traces were kept, or it does not parse) in a new span made by
/// `make_span`, which [`attach`] parents on the caller's span: the context and the span
/// to run the work in.
pub fn continue_in(
    traceparent: Option<&str>,
    make_span: impl FnOnce(&TraceContext) -> tracing::Span,
) -> (TraceContext, tracing::Span) {
    let given = traceparent.and_then(TraceContext::parse);
    let context = given.map_or_else(TraceContext::root, TraceContext::child);
    let span = make_span(&context);
    attach(&span, given.unwrap_or(context));
    (context, span)
}

fn nonzero_u128() -> u128 {
    loop {
        let mut bytes = [0u8; 16];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        let id = u128::from_be_bytes(bytes);
        if id != 0 {
            return id;
        }
    }
}

fn nonzero_u64() -> u64 {
    loop {
        let id = rand::rngs::OsRng.next_u64();
        if id != 0 {
            return id;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_parse_and_print_back() {
        let header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let context = TraceContext::parse(header).expect("the specification's example");
        assert_eq!(context.to_string(), header);
        assert_eq!(context.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        let child = context.child();
        assert_eq!(child.trace_id(), context.trace_id());
        assert_ne!(child.to_string(), header, "a new parent id");
        // A later version is read as version 00 (extra fields allowed there only).
        assert!(TraceContext::parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-later").is_some());
    }

    #[test]
    fn invalid_headers_are_refused() {
        for header in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-+bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceContext::parse(header), None, "{header:?}");
        }
    }

    #[tokio::test]
    async fn work_in_a_scope_queues_children_of_its_context() {
        assert_eq!(traceparent_to_queue(), None, "no context outside a scope");
        let context = TraceContext::root();
        let queued = context.scope(async { traceparent_to_queue() }).await.expect("a traceparent");
        let queued = TraceContext::parse(&queued).unwrap();
        assert_eq!(queued.trace_id(), context.trace_id());
        let continued = |traceparent: Option<&str>| continue_in(traceparent, |_| tracing::Span::none()).0;
        assert_eq!(continued(Some(&queued.to_string())).trace_id(), context.trace_id());
        assert_ne!(continued(None).trace_id(), context.trace_id(), "a new trace");
    }
}
