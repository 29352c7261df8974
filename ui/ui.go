package ui

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/gorilla/mux"

	"github.com/poolflow/poolflow/auth"
	"github.com/poolflow/poolflow/server"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// UI is the web UI's handler.
type UI struct {
	api     *server.Server
	router  *mux.Router
	handler http.Handler // router behind identify
	pages   map[string]*template.Template
	static  http.Handler
	origins *http.CrossOriginProtection
	log     *slog.Logger
	// sessions are the sign-in sessions (session.go); throttle slows failed sign-ins.
	sessions *scs.SessionManager
	throttle *auth.Throttle
	// now is the clock of sign-ins (the throttle) and of sessions' idle expiry; tests move it.
	now func() time.Time
	// layouts are the graphs' layouts per DAG version (graph_layout.go).
	layouts layoutCache
}

// New builds the UI on the server's read models; it has the signature of server.Config.UI.
func New(api *server.Server) http.Handler {
	u := &UI{api: api, origins: http.NewCrossOriginProtection(), log: slog.Default(), throttle: auth.DefaultThrottle(),
		now: time.Now}
	u.sessions = newSessions(api.SessionStore(), func(w http.ResponseWriter, r *http.Request, err error) { u.fail(w, r, err) })
	u.pages = parsePages()
	sub, _ := fs.Sub(staticFS, "static")
	u.static = http.StripPrefix("/ui/static/", http.FileServerFS(sub))
	u.router = u.routes()
	u.handler = u.sessions.LoadAndSave(u.identify(u.router))
	return u
}

func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) { u.handler.ServeHTTP(w, r) }

func (u *UI) routes() *mux.Router {
	r := mux.NewRouter()
	get := func(path string, h http.HandlerFunc) { r.HandleFunc(path, h).Methods(http.MethodGet, http.MethodHead) }
	post := func(path string, h http.HandlerFunc) { r.Handle(path, u.sameOrigin(h)).Methods(http.MethodPost) }
	const ti = "/ui/dags/{dag}/runs/{run}/tasks/{task}"
	get("/ui/", u.dagList)
	get("/ui/dags/{dag}", u.dagPage)
	get("/ui/dags/{dag}/code", u.codePage)
	get("/ui/dags/{dag}/runs", u.runsList)
	get("/ui/runs", u.runsList)
	get("/ui/dags/{dag}/runs/{run}", u.runPage)
	get("/ui/dags/{dag}/runs/{run}/states", u.runStatesJSON)
	get(ti, u.taskPage)
	get(ti+"/logs/{try}", u.logTail)
	get(ti+"/logs/{try}/download", u.logDownload)
	get("/ui/pools", u.poolsPage)
	get("/ui/pools/{pool}/timeline", u.poolTimelinePage)
	get("/ui/events", u.eventsPage)
	get("/ui/notifications", u.notificationsPage)
	get("/ui/backfills/{id:[0-9]+}", u.backfillPage)
	get("/ui/login", u.loginPage)
	get("/ui/account", u.accountPage)
	r.PathPrefix("/ui/static/").Handler(u.cacheStatic(u.static)).Methods(http.MethodGet, http.MethodHead)
	post("/ui/login", u.login)
	post("/ui/logout", u.logout)
	post("/ui/account/tokens", u.createToken)
	post("/ui/account/tokens/{id}/revoke", u.revokeToken)
	post("/ui/dags/{dag}/trigger", u.trigger)
	post("/ui/dags/{dag}/pause", u.pause)
	post("/ui/dags/{dag}/backfill", u.createBackfill)
	post("/ui/backfills/{id:[0-9]+}/{action:pause|unpause|cancel}", u.backfillAction)
	post(ti+"/{action:approve|reject|fail|cancel}", u.taskAction)
	post("/ui/pools/{pool}/queue/{id}/cancel", u.cancelEntry)
	post("/ui/pools/new", u.createPool)
	post("/ui/pools/{pool}/set", u.setPool)
	post("/ui/pools/{pool}/delete", u.deletePool)
	post("/ui/notifiers/{name}/test", u.testNotifier)
	const run = "/ui/dags/{dag}/runs/{run}"
	post(ti+"/clear", u.clearTask)
	post(ti+"/mark", u.markTask)
	post(ti+"/note", u.noteTask)
	post(run+"/clear", u.clearRun)
	post(run+"/mark", u.markRun)
	post(run+"/note", u.noteRun)
	post(run+"/delete", u.deleteRun)
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.errorPage(w, r, http.StatusNotFound, "There is no page at "+r.URL.Path+".")
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.errorPage(w, r, http.StatusMethodNotAllowed, "Method "+r.Method+" is not allowed here.")
	})
	return r
}

func (u *UI) cacheStatic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Assets change only with the binary; an hour keeps pages fast without stale releases.
		w.Header().Set("Cache-Control", "public, max-age=3600")
		next.ServeHTTP(w, r)
	})
}

// sameOrigin refuses a POST that a browser did not send from one of this server's pages: it
// must carry Sec-Fetch-Site: same-origin or an Origin equal to this server, and the CSRF token
// of its session (every form of a page has it: withCSRF). A request with neither header is
// refused too: every browser sends one on a POST, and nothing else posts forms.
func (u *UI) sameOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Origin") == "" && r.Header.Get("Sec-Fetch-Site") == "" {
			u.actionError(w, r, http.StatusForbidden, "This form must be sent from a poolflow page (no Origin header).")
			return
		}
		if err := u.origins.Check(r); err != nil {
			u.actionError(w, r, http.StatusForbidden, "Refused: the form was sent from another site (Origin "+
				r.Header.Get("Origin")+").")
			return
		}
		if !u.csrfValid(r) {
			u.actionError(w, r, http.StatusForbidden, "Refused: the form's CSRF token is missing or belongs to "+
				"another session (reload the page and try again).")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// page is what every page template gets.
type page struct {
	Title    string
	Nav      string // dags | pools | events | notifications
	Now      time.Time
	Path     string // the request's path and query, for "next" links
	SignedIn bool
	Token    bool   // authentication is on
	User     string // who signed in ("api.token" for the configured token)
	Roles    string // their roles, as users list shows them
	CSRF     string // the session's CSRF token (every posting form gets it: withCSRF)
	// ConfigError says why the newest poolflow.yaml is not in force (or what no longer holds in
	// the one in force): every page shows it in a banner.
	ConfigError string
	Data        any
}

// liveHeader marks app.js's live refreshes of a page: it reads only the page's [data-live]
// parts from the answer, so a page may leave heavy parts that are not live out of it.
const liveHeader = "X-Poolflow-Live"

func liveRefresh(r *http.Request) bool { return r.Header.Get(liveHeader) != "" }

// render executes a page template with status; the body is built in memory first so an error
// never leaves half a page.
func (u *UI) render(w http.ResponseWriter, r *http.Request, status int, name, title, nav string, data any) {
	t, ok := u.pages[name]
	if !ok {
		panic("ui: no page template " + name)
	}
	who := u.principal(r)
	p := page{Title: title, Nav: nav, Now: u.api.Now(), Path: r.URL.RequestURI(), SignedIn: who.Named(),
		Token: u.authOn(r), User: who.Name, Roles: who.Roles(), CSRF: u.csrfToken(r.Context()), ConfigError: u.api.ConfigStatus().Error, Data: data}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", p); err != nil {
		u.log.Error("ui: render failed", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	body := withCSRF(withoutForbiddenForms(buf.Bytes(), who, u.dagTeam), p.CSRF)
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-cache, private") // revalidated: the ETag of server/compress.go makes that a 304
	h.Add("Vary", liveHeader)                   // a live refresh may leave out what it does not update
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	// Everything is served from here: no inline script, no other origin.
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "+
		"script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

type errorData struct {
	Status  int
	Heading string
	Message string
}

// errorPage is the page for an unknown DAG, run, task or path (404) and other failures.
func (u *UI) errorPage(w http.ResponseWriter, r *http.Request, status int, msg string) {
	heading := http.StatusText(status)
	if status == http.StatusNotFound {
		heading = "Not found"
	}
	u.render(w, r, status, "error", heading, "", errorData{Status: status, Heading: heading, Message: msg})
}

// fail answers a read error with the status the API would give it.
func (u *UI) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := u.api.StatusOf(err)
	if status == http.StatusInternalServerError {
		u.log.Error("ui: page failed", "path", r.URL.Path, "err", err)
	}
	u.errorPage(w, r, status, upperFirst(msg)+".")
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Paths of the pages, escaped; templates build every link through them.

func dagPath(dag string) string { return "/ui/dags/" + url.PathEscape(dag) }

func runPath(dag, run string) string { return dagPath(dag) + "/runs/" + url.PathEscape(run) }

func taskPath(dag, run, task string) string {
	return runPath(dag, run) + "/tasks/" + url.PathEscape(task)
}

func poolPath(pool string) string { return "/ui/pools#pool-" + url.PathEscape(pool) }

// codePath is the DAG's Code tab at version n (0: the current one), compared with version
// against when it is set.
func codePath(dag string, n, against int) string {
	p := dagPath(dag) + "/code"
	q := url.Values{}
	if n > 0 {
		q.Set("version", strconv.Itoa(n))
	}
	if against > 0 {
		q.Set("diff", strconv.Itoa(against))
	}
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	return p
}

func apiPath(parts ...string) string {
	var b strings.Builder
	b.WriteString("/api/v1")
	for i, p := range parts {
		if i%2 == 1 {
			p = url.PathEscape(p)
		}
		b.WriteString("/" + p)
	}
	return b.String()
}

func parsePages() map[string]*template.Template {
	shared := []string{"templates/layout.html", "templates/parts.html"}
	out := map[string]*template.Template{}
	for _, name := range []string{"dags", "dag", "code", "runs", "run", "task", "pools", "events", "notifications", "preview", "login", "error", "action", "account",
		"backfill", "pooltimeline"} {
		t := template.New(name).Funcs(funcs)
		t = template.Must(t.ParseFS(templateFS, append(shared, "templates/"+name+".html")...))
		out[name] = t
	}
	return out
}
