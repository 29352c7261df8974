package server

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Reads (GET and HEAD of pages and of the API) are answered with an ETag and, when the client
// accepts it, gzip-compressed: a live page re-fetched every couple of seconds costs a 304 when
// nothing changed, and a big DAG page a tenth of its size when something did.
//
// The response is held in memory until the handler returns (pages are rendered in memory
// anyway) so the ETag can be the hash of the body. A response that flushes (a followed log), that
// is not a 200, that sets its own Content-Encoding, or that grows past maxHeld bytes (a full log
// download) is streamed instead: compressed, but without an ETag.

const (
	maxHeld  = 4 << 20 // bytes held to compute an ETag before a response streams
	minGzip  = 1024    // smaller bodies are sent as they are: gzip would not pay
	etagSize = 16      // bytes of the SHA-256 kept in an ETag
)

var gzipPool = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(nil, gzip.DefaultCompression); return w }}

// conditional wraps next with ETags, If-None-Match and gzip for GET and HEAD.
func conditional(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Add("Vary", "Accept-Encoding")
		cw := &condWriter{w: w, r: r, gzipOK: acceptsGzip(r)}
		defer cw.finish()
		next.ServeHTTP(cw, r)
	})
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") && strings.ReplaceAll(strings.TrimSpace(q), " ", "") != "q=0" {
			return true
		}
	}
	return false
}

// condWriter holds a 200's body, or streams it once it cannot (see above).
type condWriter struct {
	w      http.ResponseWriter
	r      *http.Request
	gzipOK bool

	status    int
	held      bytes.Buffer
	streaming bool
	gz        *gzip.Writer
	done      bool
}

func (c *condWriter) Header() http.Header { return c.w.Header() }

func (c *condWriter) Unwrap() http.ResponseWriter { return c.w }

func (c *condWriter) WriteHeader(status int) {
	if c.status != 0 {
		return
	}
	c.status = status
	h := c.w.Header()
	if status != http.StatusOK || h.Get("Content-Encoding") != "" || h.Get("Content-Type") == "text/event-stream" {
		c.stream(false)
	}
}

func (c *condWriter) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	if c.streaming {
		if c.gz != nil {
			return c.gz.Write(p)
		}
		return c.w.Write(p)
	}
	if c.held.Len()+len(p) > maxHeld {
		c.stream(true)
		return c.Write(p)
	}
	return c.held.Write(p)
}

// Flush streams from now on: a handler that flushes wants its bytes sent now.
func (c *condWriter) Flush() {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	if !c.streaming {
		c.stream(true)
	}
	if c.gz != nil {
		_ = c.gz.Flush()
	}
	_ = http.NewResponseController(c.w).Flush()
}

// stream sends the header and what is held, compressing when compress and the client agrees.
func (c *condWriter) stream(compress bool) {
	c.streaming = true
	h := c.w.Header()
	if compress && c.gzipOK && c.r.Method != http.MethodHead && h.Get("Content-Encoding") == "" {
		h.Set("Content-Encoding", "gzip")
		h.Del("Content-Length")
		h.Del("ETag") // an ETag names the identity body
		c.gz = gzipPool.Get().(*gzip.Writer)
		c.gz.Reset(c.w)
	}
	c.w.WriteHeader(c.status)
	if c.held.Len() > 0 {
		body := c.held.Bytes()
		c.held = bytes.Buffer{}
		if c.gz != nil {
			_, _ = c.gz.Write(body)
		} else {
			_, _ = c.w.Write(body)
		}
	}
}

// finish answers a held response: 304 when the client has this body, else the body (gzipped
// when it pays).
func (c *condWriter) finish() {
	if c.done {
		return
	}
	c.done = true
	if c.streaming {
		if c.gz != nil {
			_ = c.gz.Close()
			gzipPool.Put(c.gz)
		}
		return
	}
	if c.status == 0 {
		c.status = http.StatusOK
	}
	h := c.w.Header()
	body := c.held.Bytes()
	etag := h.Get("ETag")
	if etag == "" && h.Get("Cache-Control") != "no-store" {
		sum := sha256.Sum256(body)
		etag = `"` + base64.RawURLEncoding.EncodeToString(sum[:etagSize]) + `"`
		h.Set("ETag", etag)
	}
	if etag != "" && etagMatch(c.r.Header.Get("If-None-Match"), etag) {
		for _, k := range []string{"Content-Type", "Content-Length", "Content-Security-Policy"} {
			h.Del(k)
		}
		c.w.WriteHeader(http.StatusNotModified)
		return
	}
	if c.gzipOK && len(body) >= minGzip && c.r.Method != http.MethodHead {
		gz := gzipPool.Get().(*gzip.Writer)
		var out bytes.Buffer
		gz.Reset(&out)
		_, _ = gz.Write(body)
		_ = gz.Close()
		gzipPool.Put(gz)
		h.Set("Content-Encoding", "gzip")
		// The compressed body has its own ETag: a cache must not mix the two encodings.
		if etag != "" && strings.HasSuffix(etag, `"`) {
			h.Set("ETag", strings.TrimSuffix(etag, `"`)+`-gz"`)
		}
		body = out.Bytes()
	}
	// Its length, so that a client (the UI's live refresh) knows what it cost.
	h.Set("Content-Length", strconv.Itoa(len(body)))
	c.w.WriteHeader(c.status)
	if c.r.Method != http.MethodHead {
		_, _ = c.w.Write(body)
	}
}

// etagMatch reports whether an If-None-Match header names etag, compared weakly (RFC 9110
// 13.1.2: W/ and our -gz suffix ignored), or is "*".
func etagMatch(header, etag string) bool {
	if header == "" {
		return false
	}
	norm := func(t string) string {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		return strings.TrimSuffix(strings.TrimSuffix(t, `"`), "-gz") + `"`
	}
	want := norm(etag)
	for _, t := range strings.Split(header, ",") {
		if strings.TrimSpace(t) == "*" || norm(t) == want {
			return true
		}
	}
	return false
}
