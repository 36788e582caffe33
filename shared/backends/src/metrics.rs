//! Prometheus metrics shared by every role; the api exposes them at `GET /metrics`.

use std::sync::LazyLock;

use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry};

use reelfarm_domain::message::Queue;

/// The registry every metric of the process is registered in.
pub static REGISTRY: LazyLock<Registry> = LazyLock::new(Registry::new);

fn counter(name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
    REGISTRY.register(Box::new(c.clone())).expect("metric registered once");
    c
}

/// HTTP requests by route pattern, method and status.
pub static HTTP_REQUESTS: LazyLock<IntCounterVec> =
    LazyLock::new(|| counter("reelfarm_http_requests_total", "HTTP requests handled", &["method", "route", "status"]));

/// HTTP request latency by route pattern and method.
pub static HTTP_LATENCY: LazyLock<HistogramVec> = LazyLock::new(|| {
    let h = HistogramVec::new(
        HistogramOpts::new("reelfarm_http_request_duration_seconds", "HTTP request latency")
            .buckets(vec![0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0]),
        &["method", "route"],
    )
    .expect("valid metric");
    REGISTRY.register(Box::new(h.clone())).expect("metric registered once");
    h
});

static BUS_PUBLISHED: LazyLock<IntCounterVec> =
    LazyLock::new(|| counter("reelfarm_bus_published_total", "Messages published to the bus", &["queue", "outcome"]));

static BUS_CONSUMED: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter("reelfarm_bus_consumed_total", "Messages consumed from the bus, by settlement", &["queue", "settle"])
});

pub fn bus_published(queue: Queue, ok: bool) {
    BUS_PUBLISHED.with_label_values(&[queue.name(), if ok { "ok" } else { "error" }]).inc();
}

static RENDER_SOUND: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter(
        "reelfarm_render_sound_total",
        "Renders by where their sound came from: encoded, or kept from an earlier render",
        &["source"],
    )
});

/// A render's sound was encoded (`false`) or written from kept packets (`true`).
pub fn render_sound(kept: bool) {
    render_sounds(kept, 1);
}

/// `n` renders' sounds were encoded (`false`) or written from kept packets (`true`): what
/// a sandboxed render's child counted, added to its worker's.
pub fn render_sounds(kept: bool, n: u64) {
    RENDER_SOUND.with_label_values(&[if kept { "kept" } else { "encoded" }]).inc_by(n);
}

/// How many renders of this process encoded their sound and how many wrote kept packets.
pub fn render_sound_counts() -> (u64, u64) {
    let count = |label: &str| RENDER_SOUND.with_label_values(&[label]).get();
    (count("encoded"), count("kept"))
}

pub fn bus_consumed(queue: Queue, settle: &str) {
    BUS_CONSUMED.with_label_values(&[queue.name(), settle]).inc();
}

fn gauge(name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    let g = IntGaugeVec::new(Opts::new(name, help), labels).expect("valid metric");
    REGISTRY.register(Box::new(g.clone())).expect("metric registered once");
    g
}

static WORKER_IN_ROTATION: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    gauge(
        "reelfarm_worker_in_rotation",
        "1 while the worker claims renders; 0 once it was taken out of rotation (its renders kept failing where \
         other workers' succeeded, or an operator took it out)",
        &["worker"],
    )
});

/// Whether worker `id` claims renders.
pub fn worker_in_rotation(id: &str, yes: bool) {
    WORKER_IN_ROTATION.with_label_values(&[id]).set(i64::from(yes));
}

/// What the allocator holds (`allocator::heap`, read when the metrics are): bytes in use
/// (arena and mmapped chunks) and bytes free inside its arenas (kept, not returned to the
/// system). RSS that grows while the first stays level is fragmentation, not a leak.
static HEAP: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    gauge("reelfarm_heap_bytes", "The allocator's heap: bytes in use, and bytes free in its arenas", &["state"])
});

static CACHE: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    gauge(
        "reelfarm_cache_bytes",
        "Bytes each cache of the process holds (held) and may hold (limit)",
        &["cache", "state"],
    )
});

/// Cache `name` holds `held` of its `limit` bytes.
pub fn cache_bytes(name: &str, held: usize, limit: usize) {
    CACHE.with_label_values(&[name, "held"]).set(held as i64);
    CACHE.with_label_values(&[name, "limit"]).set(limit as i64);
}

fn read_heap() {
    if let Some((in_use, free)) = crate::allocator::heap() {
        HEAP.with_label_values(&["in_use"]).set(in_use as i64);
        HEAP.with_label_values(&["free"]).set(free as i64);
    }
}

/// The text exposition of every registered metric.
pub fn render() -> String {
    read_heap();
    crate::store::publish_sqlite_memory();
    let mut buf = String::new();
    let encoder = prometheus::TextEncoder::new();
    // Encoding into a String cannot fail for well-formed metric families.
    let _ = encoder.encode_utf8(&REGISTRY.gather(), &mut buf);
    buf
}
