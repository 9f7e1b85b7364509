// Package web serves the spectator page (/), the stream overlay (/overlay, or
// /?overlay=1), the player page (/play), the console (/admin,
// docs/console.md) and the browser client
// (/lb-client.js) from files embedded in the binary. It imports
// nothing from the project: the pages speak the wire protocol themselves.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"regexp"
	"strings"

	"github.com/wsgateway/wsgateway/examples"
)

// static/package.json is for vendoring lb-client.js (npm), not for serving.
//
//go:embed static/*.html static/*.js static/*.ts static/assets
var static embed.FS

// devMarker in an HTML file is replaced by "true" or "false": the pages learn
// whether they may fetch /api/v1/dev/token without an extra round trip, and
// without an inline script (which the CSP forbids).
const devMarker = "{{LB_DEV}}"

// csp keeps every script, style and connection on this origin; the pages put
// all their JS in files, so no 'unsafe-inline' is needed anywhere. Images may
// also come from https: members' avatars live on their own hosts (docs/protocol.md
// §7), and are fetched without a referrer.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; " +
	"connect-src 'self' ws: wss:; font-src 'self'; object-src 'none'; base-uri 'none'; " +
	"form-action 'self'; frame-ancestors 'self'"

// frameSource is one CSP source expression of Config.FrameAncestors: a
// scheme and host (with * for a subdomain and an optional port), nothing that
// could end the directive or start another.
var frameSource = regexp.MustCompile(`^(https?://)?(\*\.)?[A-Za-z0-9.\-]+(:[0-9]{1,5}|:\*)?$`)

// Config configures the pages. The zero value serves them without dev mode.
type Config struct {
	// Dev lets the pages fetch tokens from POST /api/v1/dev/token (the
	// gateway's --dev). When false, the pages take a token from the URL
	// fragment (#token=…).
	Dev bool
	// FrameAncestors lists the origins that may frame the pages (the
	// overlay in a tournament site's iframe), e.g. "https://a.example",
	// "https://*.example". Empty: only the gateway's own origin
	// (frame-ancestors 'self', X-Frame-Options SAMEORIGIN).
	FrameAncestors []string
}

// Web holds the embedded files, prepared once: content type, ETag and body.
// It is immutable after New and safe for concurrent use.
type Web struct {
	files map[string]*file // by URL path
	csp   string
	xfo   string // X-Frame-Options; empty when FrameAncestors names others
}

type file struct {
	body        []byte
	contentType string
	etag        string
}

// cacheControl is every file's Cache-Control. no-cache means "revalidate
// every time": a new binary takes effect on the next load, and an unchanged
// file costs a 304.
const cacheControl = "no-cache"

// routes maps each URL path to its embedded file. Anything else is a 404.
func routes() map[string]string {
	return map[string]string{
		"/":                    "static/index.html",
		"/index.html":          "static/index.html",
		"/play":                "static/play.html",
		"/admin":               "static/admin.html",
		"/assets/admin.js":     "static/assets/admin.js",
		"/assets/admin.css":    "static/assets/admin.css",
		"/overlay":             "static/overlay.html",
		"/assets/overlay.js":   "static/assets/overlay.js",
		"/assets/overlay.css":  "static/assets/overlay.css",
		"/lb-client.js":        "static/lb-client.js",
		"/lb-client.d.ts":      "static/lb-client.d.ts",
		"/assets/app.css":      "static/assets/app.css",
		"/assets/board.js":     "static/assets/board.js",
		"/assets/common.js":    "static/assets/common.js",
		"/assets/spectator.js": "static/assets/spectator.js",
		"/assets/player.js":    "static/assets/player.js",
		"/assets/icon.svg":     "static/assets/icon.svg",
	}
}

// exampleRoutes maps the example game's URL paths to its files in
// examples.Game; they are served in dev mode only.
func exampleRoutes() map[string]string {
	return map[string]string{
		"/examples/game/":         "game/index.html",
		"/examples/game/game.js":  "game/game.js",
		"/examples/game/game.css": "game/game.css",
	}
}

// New reads the embedded files and computes their ETags.
func New(cfg Config) (*Web, error) {
	w := &Web{files: make(map[string]*file), csp: csp, xfo: "SAMEORIGIN"}
	if len(cfg.FrameAncestors) > 0 {
		for _, src := range cfg.FrameAncestors {
			if !frameSource.MatchString(src) {
				return nil, fmt.Errorf("web: frame ancestor %q is not an origin like https://a.example", src)
			}
		}
		w.csp = strings.TrimSuffix(csp, "'self'") + "'self' " + strings.Join(cfg.FrameAncestors, " ")
		// X-Frame-Options cannot name other origins; browsers that know CSP
		// follow frame-ancestors instead.
		w.xfo = ""
	}
	type source struct {
		fsys   fs.FS
		routes map[string]string
	}
	sources := []source{{static, routes()}}
	if cfg.Dev {
		sources = append(sources, source{examples.Game, exampleRoutes()})
	}
	for _, src := range sources {
		if err := w.add(src.fsys, src.routes, cfg.Dev); err != nil {
			return nil, err
		}
	}
	return w, nil
}

func (w *Web) add(fsys fs.FS, routes map[string]string, dev bool) error {
	for urlPath, name := range routes {
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return fmt.Errorf("web: read %s: %w", name, err)
		}
		ct := contentType(name)
		if strings.HasPrefix(ct, "text/html") {
			body = bytes.ReplaceAll(body, []byte(devMarker), []byte(fmt.Sprint(dev)))
		}
		sum := sha256.Sum256(body)
		w.files[urlPath] = &file{
			body:        body,
			contentType: ct,
			etag:        `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`,
		}
	}
	return nil
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".ts":
		return "text/plain; charset=utf-8" // TypeScript declarations, to read or vendor
	}
	if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
		return ct
	}
	return "application/octet-stream"
}

// Handler serves GET and HEAD for /, /play, /lb-client.js and /assets/…;
// other paths are 404 and other methods 405. Every answer carries the
// security headers.
func (w *Web) Handler() http.Handler {
	return http.HandlerFunc(w.serve)
}

func (w *Web) serve(rw http.ResponseWriter, r *http.Request) {
	h := rw.Header()
	h.Set("Content-Security-Policy", w.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	// The token may sit in the page's fragment; browsers never send
	// fragments, but no-referrer also keeps board ids off other sites' logs.
	h.Set("Referrer-Policy", "no-referrer")
	if w.xfo != "" {
		h.Set("X-Frame-Options", w.xfo)
	}

	p := r.URL.Path
	if p == "/" && r.URL.Query().Get("overlay") == "1" {
		p = "/overlay" // the overlay's short form: ?board=b&overlay=1
	}
	f, ok := w.files[p]
	if !ok {
		http.Error(rw, "404 page not found", http.StatusNotFound)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(rw, "405 method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h.Set("Cache-Control", cacheControl)
	h.Set("ETag", f.etag)
	if etagMatch(r.Header.Get("If-None-Match"), f.etag) {
		rw.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", f.contentType)
	h.Set("Content-Length", fmt.Sprint(len(f.body)))
	rw.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		rw.Write(f.body)
	}
}

// etagMatch implements If-None-Match's weak comparison over a list of tags.
func etagMatch(header, etag string) bool {
	for t := range strings.SplitSeq(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}
