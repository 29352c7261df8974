package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// SenderConfig configures a Sender.
type SenderConfig struct {
	Store store.Store
	// DaemonID is the sender's name on the rows it claims (the daemon's owner id).
	DaemonID string
	// Config is the configuration in force, read at each claim (a reload takes effect at
	// once): the notifiers and notifications: of poolflow.yaml.
	Config func() *config.Config
	// BaseURL is the UI's address the events' links start with.
	BaseURL func() string
	Logger  *slog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Poll is how often the outbox is looked at when nothing wakes the sender (other daemons'
	// events, leases that lapse); 1 s when 0.
	Poll time.Duration
	// Explain, when set, completes an event as it is sent (a queue wait's reason, said as it
	// is then).
	Explain func(ctx context.Context, ev *Event)
	// Options reach the notifiers.
	Options Options
	// Sent, when set, is called after each try with its outcome (tests).
	Sent func(n store.Notification, err error)
	// Settled, when set, is called after each try with its notifier and what became of the row:
	// delivered, failed for good, or pending again (to be retried) — /metrics counts them.
	Settled func(notifier string, state vocab.DeliveryState)
}

// Sender delivers the outbox (see the package comment). Start launches it; Stop stops
// claiming, cancels the tries in flight (they are tried again later) and waits for them.
type Sender struct {
	cfg    SenderConfig
	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
	// inflight counts the tries being sent; notifications.concurrency of the configuration in
	// force bounds it at each claim, so a reload changes it at once.
	inflight atomic.Int64
	wg       sync.WaitGroup
	once     sync.Once

	mu        sync.Mutex
	notifiers map[string]cached
}

type cached struct {
	cfg config.Notifier
	n   Notifier
}

// NewSender makes a sender; nothing runs until Start.
func NewSender(cfg SenderConfig) *Sender {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.BaseURL == nil {
		cfg.BaseURL = func() string { return "http://127.0.0.1:8080" }
	}
	return &Sender{cfg: cfg, wake: make(chan struct{}, 1), done: make(chan struct{}), notifiers: map[string]cached{}}
}

// Wake tells the sender the outbox may have something new (a pass put events in it).
func (s *Sender) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Start launches the sender's loop.
func (s *Sender) Start(ctx context.Context) error {
	ctx, s.cancel = context.WithCancel(ctx)
	go s.loop(ctx)
	return nil
}

// Stop stops the sender and waits for its tries; safe to call twice, and without Start.
func (s *Sender) Stop() {
	s.once.Do(func() {
		if s.cancel == nil {
			close(s.done)
			return
		}
		s.cancel()
		<-s.done
	})
}

func (s *Sender) delivery() config.Delivery {
	var d config.Delivery
	if c := s.cfg.Config(); c != nil {
		d = c.Delivery
	}
	return d.WithDefaults()
}

func (s *Sender) loop(ctx context.Context) {
	defer close(s.done)
	defer s.wg.Wait()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		wait := s.cfg.Poll
		if more, next := s.round(ctx); more {
			wait = 0
		} else if !next.IsZero() {
			wait = min(wait, max(next.Sub(s.cfg.Now()), 0))
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-timer.C:
		}
	}
}

// round claims what is due and has a free slot, and starts sending it. more says a full
// batch was claimed (look again at once); next is when the outbox next has something due.
func (s *Sender) round(ctx context.Context) (more bool, next time.Time) {
	at, ok, err := s.cfg.Store.NextNotification(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.cfg.Logger.Warn("notifications: reading the outbox failed", "err", err)
		}
		return false, time.Time{}
	}
	now := s.cfg.Now()
	if !ok || at.After(now) {
		return false, at
	}
	free := s.delivery().Concurrency - int(s.inflight.Load())
	if free <= 0 {
		return false, time.Time{} // a try's end wakes the loop
	}
	var rows []store.Notification
	err = s.cfg.Store.WithTx(ctx, func(tx store.Tx) error {
		var err error
		rows, err = tx.ClaimNotifications(s.cfg.DaemonID, now, now.Add(s.lease()), free)
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			s.cfg.Logger.Warn("notifications: claiming failed", "err", err)
		}
		return false, time.Time{}
	}
	for _, n := range rows {
		s.inflight.Add(1)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { s.inflight.Add(-1); s.Wake() }()
			s.send(ctx, n)
		}()
	}
	return len(rows) == free, time.Time{}
}

// lease is how long a claim lasts: twice the longest notifier timeout and a margin, so that a
// live sender always settles before it lapses and a dead one's rows wait no longer.
func (s *Sender) lease() time.Duration {
	var longest time.Duration
	if c := s.cfg.Config(); c != nil {
		for _, n := range c.Notifiers {
			longest = max(longest, n.Timeout)
		}
	}
	if longest == 0 {
		longest = config.DefaultNotifierTimeout
	}
	return 2*longest + 5*time.Second
}

// notifier is the named notifier of the configuration in force, made again when its
// configuration changed.
func (s *Sender) notifier(name string) (Notifier, config.Notifier, error) {
	c := s.cfg.Config()
	var nc *config.Notifier
	if c != nil {
		nc, _ = c.Notifier(name)
	}
	if nc == nil {
		return nil, config.Notifier{}, fmt.Errorf("%w: notifier %s is not in poolflow.yaml", ErrPermanent, name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if got, ok := s.notifiers[name]; ok && sameNotifier(got.cfg, *nc) {
		return got.n, *nc, nil
	}
	n, err := New(*nc, s.cfg.Options)
	if err != nil {
		return nil, *nc, fmt.Errorf("%w: %v", ErrPermanent, err)
	}
	s.notifiers[name] = cached{*nc, n}
	return n, *nc, nil
}

func sameNotifier(a, b config.Notifier) bool {
	return fmt.Sprintf("%#v", a) == fmt.Sprintf("%#v", b) && a.URL.Reveal() == b.URL.Reveal() &&
		a.Secret.Reveal() == b.Secret.Reveal() && a.SMTP.Password.Reveal() == b.SMTP.Password.Reveal()
}

// send makes one try of n and settles it.
func (s *Sender) send(ctx context.Context, n store.Notification) {
	err := s.try(ctx, n)
	now := s.cfg.Now()
	d := s.delivery()
	o := store.NotificationOutcome{State: vocab.DeliveryDelivered, At: now}
	log := s.cfg.Logger.With("notification", n.ID, "notifier", n.Notifier, "event", n.Event, "dag_id", n.DAGID,
		"run_id", n.RunID, "try", n.Tries)
	switch {
	case err == nil:
	case errors.Is(err, ErrPermanent) || n.Tries >= d.MaxTries:
		o.State, o.Error = vocab.DeliveryFailed, err.Error()
		log.Error("notification failed for good", "err", err)
	default:
		o.State, o.Error, o.NextAt = vocab.DeliveryPending, err.Error(), now.Add(Backoff(d, n.Tries))
		log.Warn("notification try failed; will retry", "err", err, "retry_at", o.NextAt)
	}
	if len(o.Error) > 1000 {
		o.Error = o.Error[:1000]
	}
	var settled bool
	serr := s.cfg.Store.WithTx(context.WithoutCancel(ctx), func(tx store.Tx) error {
		var err error
		settled, err = tx.SettleNotification(n.ID, s.cfg.DaemonID, n.Tries, o)
		return err
	})
	switch {
	case serr != nil:
		log.Warn("notification outcome not recorded; its lease will lapse and it is sent again", "err", serr)
	case !settled:
		log.Warn("notification outcome not recorded: another daemon took it over")
	}
	if s.cfg.Settled != nil {
		s.cfg.Settled(n.Notifier, o.State)
	}
	if s.cfg.Sent != nil {
		s.cfg.Sent(n, err)
	}
}

func (s *Sender) try(ctx context.Context, n store.Notification) error {
	ev, err := Decode(n, s.cfg.BaseURL())
	if err != nil {
		return fmt.Errorf("%w: %v", ErrPermanent, err)
	}
	nf, nc, err := s.notifier(n.Notifier)
	if err != nil {
		return err
	}
	tctx, cancel := context.WithTimeout(ctx, nc.Timeout)
	defer cancel()
	if s.cfg.Explain != nil && ev.Event == vocab.EventQueueWait {
		s.cfg.Explain(tctx, &ev)
	}
	err = nf.Send(tctx, ev)
	if err != nil && tctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		return fmt.Errorf("no answer within %s: %w", nc.Timeout, err)
	}
	return err
}

// Backoff is the wait after try number tries failed: retry_delay doubled after each failed
// try, up to max_retry_delay.
func Backoff(d config.Delivery, tries int) time.Duration {
	wait := d.RetryDelay
	for i := 1; i < tries && wait < d.MaxRetryDelay; i++ {
		wait *= 2
	}
	return min(wait, d.MaxRetryDelay)
}

// SendTest sends a sample event to the notifier name of cfg at once, without the outbox: the
// "send test" of the UI and `poolflow notifiers test`. The error says why it was not taken.
func SendTest(ctx context.Context, cfg *config.Config, name, baseURL string, opts Options) error {
	nc, ok := cfg.Notifier(name)
	if !ok {
		return fmt.Errorf("%w: no notifier %s in poolflow.yaml", store.ErrNotFound, name)
	}
	n, err := New(*nc, opts)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	ev := Event{Event: vocab.EventTest, DAGID: "example_dag", DAGRunID: "manual__" + now.Format(time.RFC3339),
		TaskID: "example_task", MapIndex: -1, TryNumber: 1, State: string(vocab.TaskFailed),
		Reason: "a test notification sent by poolflow notifiers test: nothing failed", LogicalDate: now, At: now,
		Notifier: name, IdempotencyKey: Key(vocab.EventTest, "", "", "", 0, now.Format(time.RFC3339Nano), name),
		URL: baseURL + "/ui/notifications"}
	tctx, cancel := context.WithTimeout(ctx, nc.Timeout)
	defer cancel()
	if err := n.Send(tctx, ev); err != nil {
		if tctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return fmt.Errorf("no answer within %s: %w", nc.Timeout, err)
		}
		return err
	}
	return nil
}
