package protocol

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// IndexNow (indexnow.org): a site owner pushes the URLs it changed to a
// peer's share port, by GET /indexnow?url=U&key=K[&keyLocation=L] or by
// POST /indexnow with {"host", "key", "keyLocation", "urlList"}. The
// server checks the form and hands the submission to ServerOptions.
// IndexNow, which verifies the key (the site serves it at keyLocation, by
// default /{key}.txt on its host) before any URL counts. Answers follow
// the protocol: 202 when accepted for verification, 400 for a malformed
// submission, 403 when the peer takes none, 422 when the URLs are not of
// one host (or not of the peer's scope), 429 when too many wait.

// IndexNowSubmission is one submission, checked for form only.
type IndexNowSubmission struct {
	Key, KeyLocation string
	URLs             []string
}

// Errors a ServerOptions.IndexNow hook returns for the answers above.
var (
	ErrIndexNowScope = errors.New("indexnow: URLs not of one host in scope")
	ErrIndexNowBusy  = errors.New("indexnow: too many submissions wait")
)

const (
	maxIndexNowURLs  = 10000   // the protocol's limit per submission
	maxIndexNowBytes = 1 << 20 // of a POST body
)

var indexNowKey = regexp.MustCompile(`^[a-zA-Z0-9-]{8,128}$`)

// ValidIndexNowKey says whether key has IndexNow's form: 8 to 128
// letters, digits or dashes (indexnow.org). Receivers (the share server)
// and senders (package publish) check the same rule.
func ValidIndexNowKey(key string) bool { return indexNowKey.MatchString(key) }

// serveIndexNow answers an IndexNow submission.
func (s *Server) serveIndexNow(w http.ResponseWriter, r *http.Request) {
	if s.indexNow == nil {
		http.Error(w, "this peer takes no IndexNow submissions", http.StatusForbidden)
		return
	}
	var sub IndexNowSubmission
	switch r.Method {
	case http.MethodGet:
		q := r.URL.Query()
		sub = IndexNowSubmission{Key: q.Get("key"), KeyLocation: q.Get("keyLocation"), URLs: []string{q.Get("url")}}
	case http.MethodPost:
		var body struct {
			Host        string   `json:"host"`
			Key         string   `json:"key"`
			KeyLocation string   `json:"keyLocation"`
			URLList     []string `json:"urlList"`
		}
		dec := json.NewDecoder(io.LimitReader(r.Body, maxIndexNowBytes))
		if err := dec.Decode(&body); err != nil {
			http.Error(w, "a JSON body with host, key and urlList is expected", http.StatusBadRequest)
			return
		}
		for _, u := range body.URLList {
			if p, err := url.Parse(u); body.Host != "" && (err != nil || !strings.EqualFold(p.Hostname(), body.Host) && !strings.EqualFold(p.Host, body.Host)) {
				http.Error(w, "a URL is not of the host given", http.StatusUnprocessableEntity)
				return
			}
		}
		sub = IndexNowSubmission{Key: body.Key, KeyLocation: body.KeyLocation, URLs: body.URLList}
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch {
	case !ValidIndexNowKey(sub.Key):
		http.Error(w, "key: 8 to 128 letters, digits or dashes", http.StatusBadRequest)
		return
	case len(sub.URLs) == 0 || len(sub.URLs) > maxIndexNowURLs || sub.URLs[0] == "":
		http.Error(w, "1 to 10,000 URLs", http.StatusBadRequest)
		return
	case len(sub.KeyLocation) > 2048:
		http.Error(w, "keyLocation too long", http.StatusBadRequest)
		return
	}
	switch err := s.indexNow(sub); {
	case errors.Is(err, ErrIndexNowScope):
		http.Error(w, err.Error(), http.StatusUnprocessableEntity)
	case errors.Is(err, ErrIndexNowBusy):
		http.Error(w, err.Error(), http.StatusTooManyRequests)
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
	default:
		w.WriteHeader(http.StatusAccepted) // the key is verified before any URL counts
	}
}
