package remote

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are a daemon's Prometheus metrics: programs by outcome kind,
// their latency, those in flight (each holds a sandbox, a retained one
// until it is released), those refused because the daemon was full or
// draining, the tool calls that travelled back, the bytes of the messages
// each way, and the calls refused for want of credentials.
type Metrics struct {
	programs  *prometheus.CounterVec
	latency   prometheus.Histogram
	inFlight  prometheus.Gauge
	refusals  prometheus.Counter
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
		inFlight:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "codemode_programs_in_flight", Help: "Programs running now."}),
		refusals:  prometheus.NewCounter(prometheus.CounterOpts{Name: "codemode_programs_refused_total", Help: "Programs refused because the daemon was full or draining."}),
		toolCalls: prometheus.NewCounter(prometheus.CounterOpts{Name: "codemode_tool_calls_total", Help: "Tool and capability calls sent back to clients."}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "codemode_message_bytes_total",
			Help: "Bytes of the program streams' messages, by direction (in: from clients, out: to them)."}, []string{"direction"}),
	}
	m.unauth = prometheus.NewCounter(prometheus.CounterOpts{Name: "codemode_unauthenticated_total",
		Help: "Calls refused for want of a valid token or client certificate."})
	reg.MustRegister(m.programs, m.latency, m.inFlight, m.refusals, m.toolCalls, m.bytes, m.unauth)
	return m
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

func (m *Metrics) refused() {
	if m != nil {
		m.refusals.Inc()
	}
}

func (m *Metrics) ran(kind string, d time.Duration, calls int64) {
	if m != nil {
		m.programs.WithLabelValues(kind).Inc()
		m.latency.Observe(d.Seconds())
		m.toolCalls.Add(float64(calls))
	}
}

func (m *Metrics) moved(direction string, n int) {
	if m != nil {
		m.bytes.WithLabelValues(direction).Add(float64(n))
	}
}

func (m *Metrics) unauthenticated() {
	if m != nil {
		m.unauth.Inc()
	}
}
