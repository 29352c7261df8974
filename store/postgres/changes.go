package postgres

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/poolflow/poolflow/store/internal/sqlstore"
)

// How a handle tells outside commits from its own, and wakes up for them.
//
// poolflow_changes holds one counter, seq. Every write transaction that changed a row bumps it
// just before its commit and NOTIFYs the installation's channel with "<handle token> <seq>";
// writers are serialized, so seq counts the committed write transactions. A handle counts its
// own commits (own); its version is the newest seq it knows minus own, so its own commits leave
// the version as it is and anyone else's change it, as SQLite's data_version does:
//   - inside a write transaction the seq is read under the lock: exact;
//   - outside, the listener connection keeps the newest seq from the notifications and wakes
//     the loop (Changed) for another handle's; while the listener is down, or once a second
//     anyway, Version reads the row itself (the bounded poll), which also reads the schema
//     version, so a migration by a newer binary is noticed by an idle daemon.
type changes struct {
	cfg     *pgx.ConnConfig
	db      *sql.DB
	channel string
	token   string
	bound   time.Duration
	wake    chan struct{}

	mu       sync.Mutex
	seen     int64 // the newest seq known
	own      int64 // this handle's committed bumps
	listened bool  // the listener is connected and listening
	polled   time.Time

	stop context.CancelFunc
	done chan struct{}
}

// pollEvery bounds how long an outside change can go unseen when notifications are lost.
const pollEvery = time.Second

func newChanges(cfg *pgx.ConnConfig, db *sql.DB, channel string, bound time.Duration) *changes {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &changes{cfg: cfg.Copy(), db: db, channel: channel, token: hex.EncodeToString(b), bound: bound,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (c *changes) Read(q sqlstore.RowQuerier) (int64, int64, int, error) {
	var seq int64
	var schema int
	if err := q.QueryRow(`SELECT seq, (SELECT COALESCE(MAX(version), 0) FROM schema_migrations)
		FROM poolflow_changes`).Scan(&seq, &schema); err != nil {
		return 0, 0, 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = max(c.seen, seq)
	return seq - c.own, seq, schema, nil
}

func (c *changes) Wrote(q sqlstore.RowQuerier) (int64, error) {
	var seq int64
	var void string
	err := q.QueryRow(`WITH c AS (UPDATE poolflow_changes SET seq = seq + 1 RETURNING seq)
		SELECT seq, pg_notify($1, $2 || ' ' || seq)::text FROM c`, c.channel, c.token).Scan(&seq, &void)
	return seq, err
}

func (c *changes) Committed(seq int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.own++
	c.seen = max(c.seen, seq)
}

func (c *changes) Version(ctx context.Context) (int64, int, error) {
	c.mu.Lock()
	poll := !c.listened || time.Since(c.polled) >= pollEvery
	c.mu.Unlock()
	schema := 0
	if poll {
		ctx, cancel := context.WithTimeout(ctx, c.bound)
		defer cancel()
		var seq int64
		if err := c.db.QueryRowContext(ctx, `SELECT seq, (SELECT COALESCE(MAX(version), 0) FROM schema_migrations)
			FROM poolflow_changes`).Scan(&seq, &schema); err != nil {
			return 0, 0, classify(err)
		}
		c.mu.Lock()
		c.seen = max(c.seen, seq)
		c.polled = time.Now()
		c.mu.Unlock()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen - c.own, schema, nil
}

func (c *changes) Changed() <-chan struct{} { return c.wake }

func (c *changes) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// start runs the listener until Close.
func (c *changes) start() {
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	go c.listen(ctx)
}

func (c *changes) Close() error {
	if c.stop == nil {
		return nil
	}
	c.stop()
	<-c.done
	return nil
}

// listen keeps one connection LISTENing, reconnecting with a back-off; after each (re)connect
// it wakes the loop, since notifications sent while it was away are lost.
func (c *changes) listen(ctx context.Context) {
	defer close(c.done)
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		err := c.listenOnce(ctx)
		c.mu.Lock()
		c.listened = false
		c.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			backoff = 50 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

func (c *changes) listenOnce(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, c.bound)
	conn, err := pgx.ConnectConfig(cctx, c.cfg)
	cancel()
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{c.channel}.Sanitize()); err != nil {
		return err
	}
	c.mu.Lock()
	c.listened = true
	c.polled = time.Time{} // poll once: a change may have been missed while not listening
	c.mu.Unlock()
	c.signal()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		token, seqText, _ := strings.Cut(n.Payload, " ")
		seq, err := strconv.ParseInt(seqText, 10, 64)
		if err != nil {
			continue
		}
		c.mu.Lock()
		c.seen = max(c.seen, seq)
		c.mu.Unlock()
		if token != c.token {
			c.signal()
		}
	}
}
