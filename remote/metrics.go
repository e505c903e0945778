package remote

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/codemode-go/codemode"
)

// Metrics are a daemon's Prometheus metrics: programs by outcome kind,
// their latency, those in flight (each holds a sandbox, a retained one
// until it is released), those refused by reason (full: MaxPrograms in
// flight; memory: no room in the memory budget; draining), the memory
// budget and the bytes charged to it, the tool calls that travelled back,
// the bytes of the messages each way, and the calls refused for want of
// credentials.
type Metrics struct {
	programs  *prometheus.CounterVec
	latency   prometheus.Histogram
	inFlight  prometheus.Gauge
	refusals  *prometheus.CounterVec
	memory    atomic.Pointer[codemode.MemoryBudget]
	toolCalls prometheus.Counter
	bytes     *prometheus.CounterVec
	unauth    prometheus.Counter
}

// NewMetrics makes the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		programs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "codemode_programs_total",
			Help: "Programs run, by outcome kind (ok, js, timeout, ...)."}, []string{"kind"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "codemode_program_seconds",
			Help: "Time from a program's start to its result.", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "codemode_programs_in_flight", Help: "Programs running now."}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "codemode_programs_refused_total",
			Help: "Programs refused before they started, by reason (full, memory, draining): the client tries another daemon."}, []string{"reason"}),
		toolCalls: prometheus.NewCounter(prometheus.CounterOpts{Name: "codemode_tool_calls_total", Help: "Tool and capability calls sent back to clients."}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "codemode_message_bytes_total",
			Help: "Bytes of the program streams' messages, by direction (in: from clients, out: to them)."}, []string{"direction"}),
	}
	m.unauth = prometheus.NewCounter(prometheus.CounterOpts{Name: "codemode_unauthenticated_total",
		Help: "Calls refused for want of a valid token or client certificate."})
	budget := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "codemode_memory_budget_bytes",
		Help: "The memory budget the daemon's programs share (0: none)."}, func() float64 { return m.memoryStat().Budget })
	inUse := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "codemode_memory_in_use_bytes",
		Help: "The engine memory charged to the budget now: programs running, and idle sandboxes holding their pages."},
		func() float64 { return m.memoryStat().InUse })
	reg.MustRegister(m.programs, m.latency, m.inFlight, m.refusals, m.toolCalls, m.bytes, m.unauth, budget, inUse)
	for _, r := range []string{refusedFull, refusedMemory, refusedDraining} {
		m.refusals.WithLabelValues(r) // present at zero
	}
	return m
}

// The reasons a program is refused before it starts.
const (
	refusedFull     = "full"
	refusedMemory   = "memory"
	refusedDraining = "draining"
)

// memoryStat is the watched budget's use, as floats.
func (m *Metrics) memoryStat() (st struct{ Budget, InUse float64 }) {
	if b := m.memory.Load(); b != nil {
		s := b.Stats()
		st.Budget, st.InUse = float64(s.Budget), float64(s.InUse)
	}
	return st
}

func (m *Metrics) started() {
	if m != nil {
		m.inFlight.Inc()
	}
}

func (m *Metrics) finished() {
	if m != nil {
		m.inFlight.Dec()
	}
}

func (m *Metrics) refused(reason string) {
	if m != nil {
		m.refusals.WithLabelValues(reason).Inc()
	}
}

// watch reports b's use.
func (m *Metrics) watch(b *codemode.MemoryBudget) {
	if m != nil {
		m.memory.Store(b)
	}
}

func (m *Metrics) ran(kind string, d time.Duration, calls int64) {
	if m != nil {
		m.programs.WithLabelValues(kind).Inc()
		m.latency.Observe(d.Seconds())
		m.toolCalls.Add(float64(calls))
	}
}

// moved counts msg's bytes (measured only when counting): as they are,
// or, with oneof non-zero, as the stream message whose oneof field it is
// (a Standalone start or result counts what it would on a stream).
func (m *Metrics) moved(direction string, msg proto.Message, oneof protowire.Number) {
	if m == nil {
		return
	}
	n := proto.Size(msg)
	if oneof != 0 {
		n = protowire.SizeTag(oneof) + protowire.SizeBytes(n)
	}
	m.bytes.WithLabelValues(direction).Add(float64(n))
}

func (m *Metrics) unauthenticated() {
	if m != nil {
		m.unauth.Inc()
	}
}
