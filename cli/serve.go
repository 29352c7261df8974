package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/poolflow/poolflow/executor"
	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/ui"
)

// startRetry is how often serve tries again to open a busy or unavailable store at start-up
// (and logs why it waits).
const startRetry = 3 * time.Second

func (e *env) serveCmd() *cobra.Command {
	var listen, daemonID, advertise string
	var shutdownGrace time.Duration
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the scheduler, the HTTP API and the web UI",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, err := e.settings()
			if err != nil {
				return err
			}
			stateDir := e.state(cfg)
			if err := os.MkdirAll(stateDir, 0o755); err != nil {
				return err
			}
			if daemonID == "" {
				daemonID = os.Getenv("POOLFLOW_DAEMON_ID")
			}
			if daemonID == "" {
				host, _ := os.Hostname()
				abs, _ := filepath.Abs(stateDir)
				daemonID = host + ":" + abs
			}
			if advertise != "" {
				if advertise, err = server.ParseAdvertise(advertise); err != nil {
					return fmt.Errorf("--%w", err)
				}
			}
			log := e.logger()
			// Listen first: while the store is busy or unavailable, /health says so (§4.9)
			// and the scheduler waits for it instead of exiting.
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("listen %s: %w", listen, err)
			}
			var waitMu sync.Mutex
			why := "opening the store"
			waiting := func(err error) {
				waitMu.Lock()
				why = err.Error()
				waitMu.Unlock()
			}
			var handler atomic.Pointer[http.Handler]
			starting := server.Starting(func() string {
				waitMu.Lock()
				defer waitMu.Unlock()
				return why
			})
			handler.Store(&starting)
			hs := server.HTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				(*handler.Load()).ServeHTTP(w, r)
			}), server.Timeouts{})
			errc := make(chan error, 1)
			go func() { errc <- hs.Serve(ln) }()
			stopHTTP := func() {
				sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_ = hs.Shutdown(sctx)
			}
			defaulted := advertise == ""
			if defaulted {
				host, _ := os.Hostname()
				advertise = server.DefaultAdvertise(listen, ln.Addr(), host)
			}
			log.Info("poolflow listening; starting the scheduler", "listen", "http://"+ln.Addr().String(),
				"daemon_id", daemonID)
			target, opts, err := e.storeTarget(cfg)
			if err != nil {
				stopHTTP()
				return err
			}
			st, err := openWait(ctx, target, opts, log, waiting)
			if err != nil {
				stopHTTP()
				if errors.Is(err, context.Canceled) {
					return nil
				}
				return err
			}
			defer st.Close()
			token := cfg.APIToken
			if t := os.Getenv("POOLFLOW_API_TOKEN"); t != "" {
				token = t
			}
			if err := bootstrapAuth(ctx, st, cfg, token, log); err != nil {
				stopHTTP()
				return err
			}
			// The daemon's notices feed the counters and histograms of /metrics.
			metrics := server.NewMetrics()
			dm, err := executor.New(executor.Config{Store: st, Settings: cfg, DAGsDir: e.dags(), GoDAGs: e.goDAGs,
				StateDir: stateDir, Logger: log, DaemonID: daemonID, API: advertise, Notify: observe(metrics, log), NotifySettled: metrics.NotificationSettled,
				ShutdownGrace: shutdownGrace})
			if err != nil {
				stopHTTP()
				return err
			}
			if err := dm.StartWait(ctx, startRetry, waiting); err != nil {
				stopHTTP()
				if errors.Is(err, context.Canceled) {
					return nil
				}
				return err
			}
			go e.watchReload(ctx, dm, st, log) // SIGHUP re-reads poolflow.yaml (reload.go)
			srv := server.New(server.Config{Store: st, Daemon: dm, StateDir: stateDir, Token: token, Logger: log,
				Settings: cfg, Metrics: metrics, UI: ui.New, AllowedHosts: cfg.AllowedHosts})
			defer srv.Close()
			srv.Authenticator().Announce(ctx)
			serving := http.Handler(srv)
			handler.Store(&serving)
			log.Info("poolflow serving", "listen", "http://"+ln.Addr().String(), "advertise", advertise,
				"dags", e.dags(), "state", stateDir, "store", st.Path(), "daemon_id", daemonID)
			if defaulted && st.Driver() != "sqlite" && server.LoopbackURL(advertise) {
				// PostgreSQL lets daemons run on several hosts; a loopback address was not a choice.
				log.Warn("this daemon listens on loopback only, so daemons on other hosts cannot read the logs of "+
					"the attempts it runs; give it serve --listen and --advertise host:port (or --advertise "+
					"127.0.0.1:port to say that every daemon runs on this host)", "advertise", advertise)
			}
			select {
			case <-ctx.Done():
			case <-dm.Done():
				// The loop ended on its own: another process took this daemon's id.
				stopHTTP()
				return dm.Err()
			case err := <-errc:
				if !errors.Is(err, http.ErrServerClosed) {
					_ = dm.Stop()
					return err
				}
			}
			log.Info("shutting down: letting requests finish, stopping attempts")
			stopHTTP()
			return dm.Stop()
		},
	}
	c.Flags().StringVar(&listen, "listen", "127.0.0.1:8080", "address the HTTP API and UI listen on")
	c.Flags().StringVar(&daemonID, "daemon-id", "", "stable id of this daemon (default $POOLFLOW_DAEMON_ID, else host:state-dir)")
	c.Flags().StringVar(&advertise, "advertise", "",
		"address (host:port or http(s)://host:port) at which the other daemons reach this one's API to read the logs "+
			"of the attempts it ran (default the listen address; the host's name when listening on 0.0.0.0 or ::)")
	c.Flags().DurationVar(&shutdownGrace, "shutdown-grace", 30*time.Second,
		"on SIGTERM, how long running attempts get to stop before they are killed")
	return c
}

// openWait opens the store, waiting while it is busy or unavailable and logging why every few
// seconds; a schema newer than the binary ends it at once (§4.9).
func openWait(ctx context.Context, target store.Target, opts store.Options, log *slog.Logger, waiting func(error)) (store.Store, error) {
	for {
		st, err := store.OpenTarget(ctx, target, opts)
		if err == nil || errors.Is(err, store.ErrSchemaTooNew) || errors.Is(err, store.ErrInvalidOption) {
			return st, err
		}
		waiting(err)
		log.Warn("the store cannot be opened yet; waiting", "err", err, "retry_in", startRetry.String())
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(startRetry):
		}
	}
}
