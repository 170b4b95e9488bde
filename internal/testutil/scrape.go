package testutil

import (
	"errors"
	"io"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// AcceptProtobuf is the Accept header of a Prometheus server that keeps
// native histograms: the delimited protobuf exposition, the only one that
// carries them.
const AcceptProtobuf = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"

// Scrape GETs url with the Accept header accept and returns the response,
// failing the test unless it is 200 OK. The body is closed when the test
// ends.
func Scrape(t testing.TB, url, accept string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("scrape %s: %s: %s", url, resp.Status, body)
	}
	return resp
}

// ScrapeProtobuf scrapes url as a Prometheus server that keeps native
// histograms does (AcceptProtobuf) and returns the families by name,
// failing the test if the endpoint answers in another format or serves a
// family twice.
func ScrapeProtobuf(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp := Scrape(t, url, AcceptProtobuf)
	format := expfmt.ResponseFormat(resp.Header)
	if format.FormatType() != expfmt.TypeProtoDelim {
		t.Fatalf("scrape %s answered %q (%s), want the delimited protobuf format", url, format, resp.Header.Get("Content-Type"))
	}
	dec := expfmt.NewDecoder(resp.Body, format)
	out := map[string]*dto.MetricFamily{}
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatal(err)
		}
		if _, dup := out[mf.GetName()]; dup {
			t.Errorf("scrape %s: family %s served twice", url, mf.GetName())
		}
		out[mf.GetName()] = mf
	}
}
