package server

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Notification metrics (§13): each try this process's sender made, by notifier and outcome
// (delivered, failed for good, retried), and the outbox's depth, read from the store at scrape
// time (every daemon's events, since any live daemon may deliver them).

// NotificationSettled counts one try of a notification by notifier and what became of it. Pass
// it as executor.Config.NotifySettled: it never blocks.
func (m *Metrics) NotificationSettled(notifier string, state vocab.DeliveryState) {
	outcome := "retried"
	if state.Terminal() {
		outcome = string(state) // delivered, or failed for good
	}
	m.deliveries.WithLabelValues(notifier, outcome).Inc()
}

func newDeliveries() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "poolflow_notification_deliveries_total",
		Help: "Tries of notifications this process sent, by notifier and outcome: delivered, failed (for good) or retried."},
		[]string{"notifier", "outcome"})
}

// outboxCollector reads the outbox's pending rows at scrape time.
type outboxCollector struct {
	pools   *poolCollector // its store
	pending *prometheus.Desc
}

func newOutboxCollector(pools *poolCollector) *outboxCollector {
	return &outboxCollector{pools: pools, pending: prometheus.NewDesc("poolflow_notification_outbox_pending",
		"Notifications in the outbox not yet delivered or failed for good (due now, or waiting to be retried).", nil, nil)}
}

func (c *outboxCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.pending }

func (c *outboxCollector) Collect(ch chan<- prometheus.Metric) {
	p := c.pools.st.Load()
	if p == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), store.OpTimeout)
	defer cancel()
	_, n, err := (*p).ListNotifications(ctx, store.NotificationFilter{State: vocab.DeliveryPending, Limit: 1})
	if err != nil {
		return // poolflow_pool_state_available says the store is out
	}
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(n))
}
