package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/poolflow/poolflow/executor"
	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/ui"
)

func (e *env) serveCmd() *cobra.Command {
	var listen, daemonID string
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the scheduler, the HTTP API and the web UI",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, st, stateDir, err := e.open(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			if daemonID == "" {
				daemonID = os.Getenv("POOLFLOW_DAEMON_ID")
			}
			if daemonID == "" {
				host, _ := os.Hostname()
				abs, _ := filepath.Abs(stateDir)
				daemonID = host + ":" + abs
			}
			log := e.logger()
			// The daemon's notices feed the counters and histograms of /metrics.
			metrics := server.NewMetrics()
			dm, err := executor.New(executor.Config{Store: st, Settings: cfg, DAGsDir: e.dags(), GoDAGs: e.goDAGs,
				StateDir: stateDir, Logger: log, DaemonID: daemonID, Notify: metrics.Observe})
			if err != nil {
				return err
			}
			if err := dm.Start(ctx); err != nil {
				return err
			}
			go e.watchReload(ctx, dm, log) // SIGHUP re-reads poolflow.yaml (reload.go)
			token := cfg.APIToken
			if t := os.Getenv("POOLFLOW_API_TOKEN"); t != "" {
				token = t
			}
			srv := server.New(server.Config{Store: st, Daemon: dm, StateDir: stateDir, Token: token, Logger: log,
				Settings: cfg, Metrics: metrics, UI: ui.New, AllowedHosts: cfg.AllowedHosts})
			defer srv.Close()
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				_ = dm.Stop()
				return fmt.Errorf("listen %s: %w", listen, err)
			}
			hs := server.HTTPServer(srv, server.Timeouts{})
			log.Info("poolflow serving", "listen", "http://"+ln.Addr().String(), "dags", e.dags(), "state", stateDir,
				"daemon_id", daemonID)
			errc := make(chan error, 1)
			go func() { errc <- hs.Serve(ln) }()
			select {
			case <-ctx.Done():
			case err := <-errc:
				if !errors.Is(err, http.ErrServerClosed) {
					_ = dm.Stop()
					return err
				}
			}
			log.Info("shutting down: letting requests finish, stopping attempts")
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = hs.Shutdown(sctx)
			return dm.Stop()
		},
	}
	c.Flags().StringVar(&listen, "listen", "127.0.0.1:8080", "address the HTTP API and UI listen on")
	c.Flags().StringVar(&daemonID, "daemon-id", "", "stable id of this daemon (default $POOLFLOW_DAEMON_ID, else host:state-dir)")
	return c
}
