package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/poolflow/poolflow/auth"
	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/executor"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Config configures the HTTP server.
type Config struct {
	Store    store.Store
	Daemon   *executor.Daemon // nil: reads work, triggers and commands answer 503
	StateDir string           // attempt logs are read from StateDir/logs
	// Token is poolflow.yaml's api.token (POOLFLOW_API_TOKEN): an admin token (§15); "" = none.
	// With no token and no user in the store, authentication is off.
	Token  string
	Logger *slog.Logger

	// Settings is the poolflow.yaml the daemon runs with: pool changes are checked against it
	// (file pools are read-only over the API) and POST /rules/test uses its rules.
	// nil = config.Default().
	Settings *config.Config
	// Metrics serves /metrics; nil = a fresh one whose notice counters stay at zero (pass the
	// same Metrics as executor.Config.Notify's receiver to feed them).
	Metrics *Metrics
	// Writer is the store handle the API writes through (pause, pools, commands to runs owned by
	// another process). It must be a different connection from the daemon's, so that the daemon
	// sees those writes as outside changes and reloads. nil = New opens one on Store's file.
	Writer store.Store
	// UI, when set, builds the web UI from the server (whose read models and actions it uses);
	// it is mounted under /ui/ and / redirects there.
	UI func(api *Server) http.Handler
	// AllowedHosts are host names (or name:port) served besides loopback names when the server
	// listens on loopback (server.allowed_hosts); see hostAllowed.
	AllowedHosts []string
	// Now is the clock for written timestamps; nil = time.Now.
	Now func() time.Time
	// CommandWait bounds how long a command to a run owned by another process is awaited
	// before the API answers 202; default 5s.
	CommandWait time.Duration
	// LineSyncEntries: a pools page whose waiting lines are stale reads them again before it
	// answers while fewer entries than this wait; with more, it answers from the last read,
	// saying how old it is, and reads them again in the background (waiting_line.go).
	// 0 = 2,000.
	LineSyncEntries int
	// Host is this host's name as owner rows name hosts (a daemon advertising a loopback
	// address is asked for its logs only from its own host); "" = os.Hostname().
	Host string
}

// Server is the HTTP handler.
type Server struct {
	cfg       Config
	router    *mux.Router
	log       *slog.Logger
	writer    store.Store
	ownWriter bool
	handler   http.Handler // router behind guard
	bodies    uploads      // the request bodies being read (uploads.go)
	origins   *http.CrossOriginProtection
	host      string     // Config.Host
	logs      *logClient // reads logs other daemons hold (logproxy.go)
	authn     *auth.Authenticator
	proxy     proxyTokens // tokens of UI users for reading other daemons' logs (proxytoken.go)
	line      lineCache   // the pools page's waiting lines (waiting_line.go)
}

// maxBody caps request bodies (1 MiB).
const maxBody = 1 << 20

// New builds the router.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Settings == nil {
		cfg.Settings = config.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.CommandWait <= 0 {
		cfg.CommandWait = 5 * time.Second
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	cfg.Metrics.watch(cfg.Store)
	if cfg.Host == "" {
		cfg.Host, _ = os.Hostname()
	}
	s := &Server{cfg: cfg, log: cfg.Logger, writer: cfg.Writer, origins: http.NewCrossOriginProtection(),
		host: cfg.Host, logs: newLogClient()}
	if s.writer == nil && cfg.Store != nil {
		w, err := cfg.Store.Reopen(context.Background())
		if err != nil {
			// Writes still work through the shared handle; the daemon then sees them at its
			// next reload instead of at once.
			s.log.Warn("api: cannot open a separate store connection; using the daemon's", "err", err)
			s.writer = cfg.Store
		} else {
			s.writer, s.ownWriter = w, true
		}
	}
	s.line.ctx, s.line.stop = context.WithCancel(context.Background())
	s.authn = &auth.Authenticator{Store: cfg.Store, Legacy: cfg.Token, Now: cfg.Now, Log: cfg.Logger,
		Anonymous: func() vocab.Role { return s.Settings().Auth.Anonymous }}
	s.router = s.routes()
	s.handler = s.guard(conditional(s.router))
	return s
}

// SessionStore is the store the UI keeps its sign-in sessions in: the API's writer, a handle of
// its own, so a sign-in is an outside change to the daemon like any API write.
func (s *Server) SessionStore() store.Store { return s.writer }

// Close releases the store connection New opened. It is safe to call twice.
func (s *Server) Close() error {
	s.logs.close()
	s.line.closeLine()
	if s.ownWriter {
		s.ownWriter = false
		return s.writer.Close()
	}
	return nil
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// route is one registered route: the table both the router and the OpenAPI test read.
type route struct {
	method, path string
	handler      http.HandlerFunc
	// perm is the permission the route needs (§15, vocab.Permission): PermPublic for the
	// probes, PermRead for reads, the operator's and the admin's for the writes. A route
	// without one does not start (routes panics; TestEveryRouteHasAPermission walks the mux).
	perm vocab.Permission
	// query are the query parameters the route takes (filters.go); any other is a 400.
	query []string
}

// table is every route of the API with the permission it needs. ADD A NEW ROUTE HERE, with
// its permission (vocab.Permission; the weakest that covers what it does), its entry in
// openapi.yaml (x-permission says the same) and a row in TestRoutePermissions' expectations
// if it needs a team check.
func (s *Server) table() []route {
	const v1 = "/api/v1"
	ti := v1 + "/dags/{dag_id}/dagRuns/{dag_run_id}/taskInstances/{task_id}"
	const (
		public  = vocab.PermPublic
		read    = vocab.PermRead
		logs    = vocab.PermLogs
		trigger = vocab.PermTrigger
		pause   = vocab.PermPause
		repair  = vocab.PermRepair
		approve = vocab.PermApprove
		cancel  = vocab.PermCancel
		poolsW  = vocab.PermPools
		// backfillW creates and steers backfills (§11); its dry run too, which answers what
		// creating one would do.
		backfillW = vocab.PermBackfill
	)
	return []route{
		{http.MethodGet, v1 + "/health", s.health, public, nil},
		{http.MethodGet, v1 + "/openapi.yaml", s.openAPI, public, nil},
		{http.MethodGet, v1 + "/dags", s.listDAGs, read, dagsParams},
		{http.MethodGet, v1 + "/dags/{dag_id}", s.getDAG, read, nil},
		{http.MethodPatch, v1 + "/dags/{dag_id}", s.patchDAG, pause, updateMask},
		{http.MethodGet, v1 + "/dags/{dag_id}/versions", s.listDAGVersions, read, versionsParams},
		{http.MethodGet, v1 + "/dagSources/{dag_id}", s.getDAGSource, read, sourceParams},
		{http.MethodGet, v1 + "/dags/{dag_id}/dagRuns", s.listRuns, read, dagRunsParams},
		{http.MethodPost, v1 + "/dags/{dag_id}/dagRuns", s.triggerRun, trigger, nil},
		{http.MethodGet, v1 + "/dags/{dag_id}/dagRuns/{dag_run_id}", s.getRun, read, nil},
		{http.MethodPatch, v1 + "/dags/{dag_id}/dagRuns/{dag_run_id}", s.patchRun, repair, nil},
		{http.MethodDelete, v1 + "/dags/{dag_id}/dagRuns/{dag_run_id}", s.deleteRun, repair, forceParam},
		{http.MethodPost, v1 + "/dags/{dag_id}/dagRuns/{dag_run_id}/clear", s.clearRun, repair, nil},
		{http.MethodPost, v1 + "/dags/{dag_id}/clearTaskInstances", s.clearTaskInstances, repair, nil},
		{http.MethodGet, v1 + "/dags/{dag_id}/dagRuns/{dag_run_id}/taskInstances", s.listTaskInstances, read, tisParams},
		{http.MethodGet, ti, s.getTaskInstance, read, nil},
		{http.MethodPatch, ti, s.patchTaskInstance, repair, nil},
		{http.MethodGet, ti + "/dependencies", s.getDependencies, read, nil},
		{http.MethodGet, ti + "/output", s.getOutput, logs, nil},
		{http.MethodGet, ti + "/listMapped", s.listMapped, read, tisParams},
		// Airflow's paths to one mapped instance (mapindex.go): …/{task_id}/{map_index}. After
		// the fixed names above, which mux tries first.
		{http.MethodGet, ti + "/{map_index}", s.withMapIndex(s.getTaskInstance), read, nil},
		{http.MethodPatch, ti + "/{map_index}", s.withMapIndex(s.patchTaskInstance), repair, nil},
		{http.MethodGet, ti + "/{map_index}/dependencies", s.withMapIndex(s.getDependencies), read, nil},
		{http.MethodGet, ti + "/{map_index}/output", s.withMapIndex(s.getOutput), logs, nil},
		{http.MethodGet, ti + "/logs/{try_number}", s.withMapIndex(s.getLog), logs, []string{"download", "map_index"}},
		{http.MethodPost, ti + "/approve", s.decideGate(vocab.CommandApprove), approve, nil},
		{http.MethodPost, ti + "/reject", s.decideGate(vocab.CommandReject), approve, nil},
		{http.MethodGet, v1 + "/pools", s.listPools, read, poolsParams},
		{http.MethodPost, v1 + "/pools", s.createPool, poolsW, nil},
		{http.MethodGet, v1 + "/pools/{pool_name}", s.getPool, read, nil},
		{http.MethodPatch, v1 + "/pools/{pool_name}", s.patchPool, poolsW, forceParam},
		{http.MethodDelete, v1 + "/pools/{pool_name}", s.deletePool, poolsW, forceParam},
		{http.MethodGet, v1 + "/pools/{pool_name}/timeline", s.getPoolTimeline, read, []string{"window", "end"}},
		{http.MethodGet, v1 + "/pools/{pool_name}/holders", s.getPoolHolders, read, []string{"at"}},
		{http.MethodGet, v1 + "/importErrors", s.listImportErrors, read, importErrsPars},
		{http.MethodPost, v1 + "/rules/test", s.testRules, read, nil},
		{http.MethodGet, v1 + "/eventLogs", s.listEvents, read, eventParams},
		{http.MethodGet, v1 + "/notifications", s.listNotifications, read, notificationParams},
		{http.MethodGet, v1 + "/notifiers", s.listNotifiers, read, nil},
		{http.MethodPost, v1 + "/notifiers/{name}/test", s.testNotifier, vocab.PermNotify, nil},
		{http.MethodPost, v1 + "/backfills", s.createBackfill, backfillW, nil},
		{http.MethodPost, v1 + "/backfills/dry_run", s.dryRunBackfill, backfillW, nil},
		{http.MethodGet, v1 + "/backfills", s.listBackfills, read, backfillsParams},
		{http.MethodGet, v1 + "/backfills/{backfill_id}", s.getBackfill, read, nil},
		{http.MethodGet, v1 + "/backfills/{backfill_id}/dates", s.listBackfillDates, read, pageParams},
		{http.MethodPost, v1 + "/backfills/{backfill_id}/pause", s.changeBackfill("pause"), backfillW, nil},
		{http.MethodPost, v1 + "/backfills/{backfill_id}/unpause", s.changeBackfill("unpause"), backfillW, nil},
		{http.MethodPost, v1 + "/backfills/{backfill_id}/cancel", s.changeBackfill("cancel"), backfillW, nil},
		// The seed's routes (seed 000), outside /api/v1.
		{http.MethodGet, "/pools", s.poolBoard, read, nil},
		{http.MethodPost, "/pools/{name}/queue/{key}/cancel", s.cancelEntry, cancel, nil},
		{http.MethodGet, "/metrics", s.metrics, read, nil},
		// Probes for Kubernetes and load balancers (probes.go).
		{http.MethodGet, "/livez", s.livez, public, nil},
		{http.MethodGet, "/readyz", s.readyz, public, nil},
	}
}

func (s *Server) routes() *mux.Router {
	r := mux.NewRouter()
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, http.StatusNotFound, fmt.Sprintf("no such resource: %s", r.URL.Path))
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed on %s", r.Method, r.URL.Path))
	})
	r.Use(s.recoverPanics, keepClient, s.authenticate)
	for _, rt := range s.table() {
		if !rt.perm.Valid() {
			panic(fmt.Sprintf("server: route %s %s has no permission (give it one in table)", rt.method, rt.path))
		}
		h := s.checkQuery(rt.query, rt.handler)
		if strings.Contains(rt.path, "{dag_id}") && rt.perm.Role() != vocab.RoleViewer {
			h = s.authorizeDAG(rt.perm, h)
		}
		h = s.authorize(rt.perm, h)
		if rt.method != http.MethodGet && rt.method != http.MethodHead {
			h = s.mutation(h)
		}
		r.Handle(rt.path, h).Methods(rt.method)
	}
	if s.cfg.UI != nil {
		r.PathPrefix("/ui/").Handler(s.cfg.UI(s))
		r.Handle("/", http.RedirectHandler("/ui/", http.StatusFound)).Methods(http.MethodGet, http.MethodHead)
	}
	return r
}

// recoverPanics turns a handler panic into a 500 problem, so one bad request never takes the
// daemon down with it.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.Error("api: handler panicked", "method", r.Method, "path", r.URL.Path, "panic", p)
				writeProblem(w, http.StatusInternalServerError, "internal error")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// now is the server's clock in UTC.
func (s *Server) now() time.Time { return s.cfg.Now().UTC() }

// daemon returns the daemon, or an error answering 503 when there is none.
func (s *Server) daemon() (*executor.Daemon, error) {
	if s.cfg.Daemon == nil {
		return nil, &apiError{status: http.StatusServiceUnavailable, detail: "the scheduler is not running in this process"}
	}
	select {
	case <-s.cfg.Daemon.Done():
		return nil, &apiError{status: http.StatusServiceUnavailable, detail: "the scheduler has stopped"}
	default:
	}
	return s.cfg.Daemon, nil
}

// wake tells the daemon about a write it should act on at once.
func (s *Server) wake() {
	if s.cfg.Daemon != nil {
		s.cfg.Daemon.Wake()
	}
}
