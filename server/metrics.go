package server

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/poolflow/poolflow/executor"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
)

// Metrics is what /metrics serves. Pool gauges are read from the store at scrape time, so they
// agree with GET /pools and cover every daemon sharing the database; the counters and
// histograms come from this process's daemon through Observe (executor.Config.Notify).
type Metrics struct {
	reg *prometheus.Registry

	admissions      *prometheus.CounterVec
	expirations     *prometheus.CounterVec
	rejections      *prometheus.CounterVec
	admissionWait   *prometheus.HistogramVec
	attempts        *prometheus.CounterVec
	attemptDuration *prometheus.HistogramVec
	runs            *prometheus.CounterVec
	deliveries      *prometheus.CounterVec // metrics_notify.go

	pools  *poolCollector
	outbox *outboxCollector
}

// NewMetrics builds the metrics with their own registry (plus the Go and process collectors).
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		admissions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "poolflow_admissions_total",
			Help: "Queue entries admitted, by the pool the entry waited on (its first named pool when it did not wait)."}, []string{"pool"}),
		expirations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "poolflow_expirations_total",
			Help: "Queue entries that expired past their queue deadline, by pool."}, []string{"pool"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "poolflow_rejections_total",
			Help: "Queue entries rejected (backlog full, over capacity, draining), by pool."}, []string{"pool"}),
		admissionWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "poolflow_admission_wait_seconds",
			Help:    "Time from enqueue to admission, by the pool the entry waited on (its first named pool when it did not wait).",
			Buckets: []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 24 * 3600}}, []string{"pool"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "poolflow_attempts_total",
			Help: "Attempts that ended, by DAG and outcome (success, failed, skipped)."}, []string{"dag_id", "state"}),
		attemptDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "poolflow_attempt_duration_seconds",
			Help:    "Run time of ended attempts, by DAG and outcome.",
			Buckets: prometheus.ExponentialBuckets(0.05, 4, 11)}, []string{"dag_id", "state"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "poolflow_dag_runs_total",
			Help: "DAG runs that ended, by DAG and state."}, []string{"dag_id", "state"}),
		deliveries: newDeliveries(),
		pools:      newPoolCollector(),
	}
	m.outbox = newOutboxCollector(m.pools)
	m.reg.MustRegister(m.admissions, m.expirations, m.rejections, m.admissionWait, m.attempts, m.attemptDuration,
		m.runs, m.deliveries, m.pools, m.outbox, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Observe records what a committed scheduler pass did. Pass it as executor.Config.Notify: it
// never blocks.
func (m *Metrics) Observe(n executor.Notice) {
	pool := poolLabel(n.Pool)
	switch n.Kind {
	case executor.NoticeAdmitted:
		m.admissions.WithLabelValues(pool).Inc()
		m.admissionWait.WithLabelValues(pool).Observe(n.Duration.Seconds())
	case executor.NoticeExpired:
		m.expirations.WithLabelValues(pool).Inc()
	case executor.NoticeRejected:
		m.rejections.WithLabelValues(pool).Inc()
	case executor.NoticeAttemptEnded:
		m.attempts.WithLabelValues(n.DAGID, n.State).Inc()
		if n.Duration > 0 {
			m.attemptDuration.WithLabelValues(n.DAGID, n.State).Observe(n.Duration.Seconds())
		}
	case executor.NoticeRunEnded:
		m.runs.WithLabelValues(n.DAGID, n.State).Inc()
	}
}

// poolLabel is the pool label of a notice: the pool the entry waited on (executor's
// firstPool), with the per-run and per-task limits folded into "_dag" and "_task" so that the
// label stays bounded.
func poolLabel(pool string) string {
	switch {
	case strings.HasPrefix(pool, pools.DAGPoolPrefix):
		return strings.TrimSuffix(pools.DAGPoolPrefix, "/")
	case strings.HasPrefix(pool, pools.TaskPrefix):
		return strings.TrimSuffix(pools.TaskPrefix, "/")
	case strings.HasPrefix(pool, pools.BackfillCapPrefix):
		return strings.TrimSuffix(pools.BackfillCapPrefix, "/")
	}
	return pool
}

// Handler serves the metrics in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// watch sets the store the pool gauges are read from.
func (m *Metrics) watch(st store.Store) {
	if st != nil {
		m.pools.st.Store(&st)
	}
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	s.cfg.Metrics.Handler().ServeHTTP(w, r)
}

// poolCollector reads every named pool's capacity, occupancy and queue depth at scrape time.
type poolCollector struct {
	st        atomic.Pointer[store.Store]
	slots     *prometheus.Desc
	occupied  *prometheus.Desc
	queued    *prometheus.Desc
	available *prometheus.Desc
}

func newPoolCollector() *poolCollector {
	return &poolCollector{
		slots: prometheus.NewDesc("poolflow_pool_slots", "Capacity of the pool in slots (-1 = unlimited).",
			[]string{"pool"}, nil),
		occupied: prometheus.NewDesc("poolflow_pool_occupied_slots", "Slots held by claims in the pool.",
			[]string{"pool"}, nil),
		queued: prometheus.NewDesc("poolflow_pool_queued_entries", "Queue entries waiting for the pool.",
			[]string{"pool"}, nil),
		available: prometheus.NewDesc("poolflow_pool_state_available",
			"1 when pool state could be read from the store at this scrape, 0 when it is unavailable.", nil, nil),
	}
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.slots
	ch <- c.occupied
	ch <- c.queued
	ch <- c.available
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	p := c.st.Load()
	if p == nil {
		return
	}
	st := *p
	ctx, cancel := context.WithTimeout(context.Background(), store.OpTimeout)
	defer cancel()
	ps, err := readPoolState(ctx, st)
	if err != nil {
		// A scrape still succeeds, so the outage itself is visible as a metric.
		ch <- prometheus.MustNewConstMetric(c.available, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.available, prometheus.GaugeValue, 1)
	for _, p := range ps.pools {
		u := ps.usage(p.Name)
		ch <- prometheus.MustNewConstMetric(c.slots, prometheus.GaugeValue, float64(p.Slots), p.Name)
		ch <- prometheus.MustNewConstMetric(c.occupied, prometheus.GaugeValue, float64(u.occupied), p.Name)
		ch <- prometheus.MustNewConstMetric(c.queued, prometheus.GaugeValue, float64(u.queuedEntries), p.Name)
	}
}
