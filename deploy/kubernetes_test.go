package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/wsgateway/wsgateway/internal/clientaddr"
)

// k8sObject is the part of a manifest the test reads; the rest is kept
// as raw YAML nodes.
type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec yaml.Node `yaml:"spec"`
}

func readManifests(t *testing.T) map[string]*k8sObject {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "deploy", "kubernetes", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests under deploy/kubernetes: %v", err)
	}
	out := map[string]*k8sObject{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var o k8sObject
			if err := dec.Decode(&o); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if o.Kind == "" || o.APIVersion == "" || o.Metadata.Name == "" {
				t.Fatalf("%s: an object without kind, apiVersion or name", f)
			}
			out[o.Kind] = &o
		}
	}
	return out
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
	} `yaml:"httpGet"`
}

type deploymentSpec struct {
	Selector struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	} `yaml:"selector"`
	Template struct {
		Metadata struct {
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"metadata"`
		Spec struct {
			TerminationGracePeriodSeconds int `yaml:"terminationGracePeriodSeconds"`
			Containers                    []struct {
				Env []struct {
					Name  string `yaml:"name"`
					Value string `yaml:"value"`
				} `yaml:"env"`
				ReadinessProbe *probe `yaml:"readinessProbe"`
				LivenessProbe  *probe `yaml:"livenessProbe"`
				Lifecycle      struct {
					PreStop *struct {
						Sleep struct {
							Seconds int `yaml:"seconds"`
						} `yaml:"sleep"`
					} `yaml:"preStop"`
				} `yaml:"lifecycle"`
				Resources struct {
					Requests map[string]string `yaml:"requests"`
					Limits   map[string]string `yaml:"limits"`
				} `yaml:"resources"`
			} `yaml:"containers"`
		} `yaml:"spec"`
	} `yaml:"template"`
}

// TestKubernetesManifests: a Deployment probing /readyz and /healthz whose
// grace period outlasts preStop plus the drain, with resources; a Service,
// a PodDisruptionBudget and an HPA that all select or target it.
func TestKubernetesManifests(t *testing.T) {
	t.Parallel()
	objs := readManifests(t)
	for _, kind := range []string{"Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler"} {
		if _, ok := objs[kind]; !ok {
			t.Fatalf("no %s in deploy/kubernetes", kind)
		}
	}
	dep := objs["Deployment"]
	var d deploymentSpec
	if err := dep.Spec.Decode(&d); err != nil {
		t.Fatal(err)
	}
	if len(d.Template.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(d.Template.Spec.Containers))
	}
	c := d.Template.Spec.Containers[0]
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Error("readiness probe must GET /readyz")
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Error("liveness probe must GET /healthz (not /readyz: a Redis outage must not restart every pod)")
	}
	drain := 10 * time.Second // the gateway's default
	for _, e := range c.Env {
		if e.Name == "LB_DRAIN_TIMEOUT" {
			var err error
			if drain, err = time.ParseDuration(e.Value); err != nil {
				t.Fatalf("LB_DRAIN_TIMEOUT %q: %v", e.Value, err)
			}
		}
	}
	if c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep.Seconds <= 0 {
		t.Error("no preStop pause before SIGTERM")
	} else if grace, need := time.Duration(d.Template.Spec.TerminationGracePeriodSeconds)*time.Second,
		time.Duration(c.Lifecycle.PreStop.Sleep.Seconds)*time.Second+drain; grace <= need {
		t.Errorf("terminationGracePeriodSeconds %v must exceed preStop + drain (%v)", grace, need)
	}
	// /metrics names private boards: on its own port, which Prometheus
	// scrapes and the Service does not expose; and the proxies in front
	// named, so per-address limits count the clients behind them.
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	_, mport, err := net.SplitHostPort(env["LB_METRICS_ADDR"])
	if err != nil {
		t.Errorf("LB_METRICS_ADDR %q: want a metrics address of its own (%v)", env["LB_METRICS_ADDR"], err)
	}
	if mport == "8080" || d.Template.Metadata.Annotations["prometheus.io/port"] != mport {
		t.Errorf("Prometheus scrapes port %q, LB_METRICS_ADDR is %q: want the metrics port, not the main one",
			d.Template.Metadata.Annotations["prometheus.io/port"], env["LB_METRICS_ADDR"])
	}
	if ps, err := clientaddr.Parse(env["LB_TRUSTED_PROXIES"]); err != nil || len(ps) == 0 {
		t.Errorf("LB_TRUSTED_PROXIES %q: want the Ingress's addresses (%v)", env["LB_TRUSTED_PROXIES"], err)
	}
	if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" || c.Resources.Limits["memory"] == "" {
		t.Errorf("resources %+v: want cpu and memory requests and a memory limit", c.Resources)
	}
	labels := d.Template.Metadata.Labels
	for k, v := range d.Selector.MatchLabels {
		if labels[k] != v {
			t.Errorf("the Deployment's selector %s=%s does not match its pods", k, v)
		}
	}
	selects := func(kind string, sel map[string]string) {
		if len(sel) == 0 {
			t.Errorf("%s has no selector", kind)
		}
		for k, v := range sel {
			if labels[k] != v {
				t.Errorf("%s selects %s=%s, which the pods lack", kind, k, v)
			}
		}
	}
	var svc struct {
		Selector        map[string]string `yaml:"selector"`
		SessionAffinity string            `yaml:"sessionAffinity"`
		Ports           []struct {
			TargetPort any `yaml:"targetPort"`
		} `yaml:"ports"`
	}
	if err := objs["Service"].Spec.Decode(&svc); err != nil {
		t.Fatal(err)
	}
	for _, p := range svc.Ports {
		if fmt.Sprint(p.TargetPort) == mport || p.TargetPort == "metrics" {
			t.Errorf("the Service exposes the metrics port %v", p.TargetPort)
		}
	}
	selects("Service", svc.Selector)
	if svc.SessionAffinity != "" && svc.SessionAffinity != "None" {
		t.Errorf("Service sessionAffinity %q: the gateways need no sticky sessions", svc.SessionAffinity)
	}
	var pdb struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		MaxUnavailable any `yaml:"maxUnavailable"`
		MinAvailable   any `yaml:"minAvailable"`
	}
	if err := objs["PodDisruptionBudget"].Spec.Decode(&pdb); err != nil {
		t.Fatal(err)
	}
	selects("PodDisruptionBudget", pdb.Selector.MatchLabels)
	if pdb.MaxUnavailable == nil && pdb.MinAvailable == nil {
		t.Error("PodDisruptionBudget sets neither maxUnavailable nor minAvailable")
	}
	var hpa struct {
		ScaleTargetRef struct {
			Kind string `yaml:"kind"`
			Name string `yaml:"name"`
		} `yaml:"scaleTargetRef"`
		MinReplicas int `yaml:"minReplicas"`
		MaxReplicas int `yaml:"maxReplicas"`
	}
	if err := objs["HorizontalPodAutoscaler"].Spec.Decode(&hpa); err != nil {
		t.Fatal(err)
	}
	if hpa.ScaleTargetRef.Kind != "Deployment" || hpa.ScaleTargetRef.Name != dep.Metadata.Name {
		t.Errorf("HPA targets %s/%s, want Deployment/%s", hpa.ScaleTargetRef.Kind, hpa.ScaleTargetRef.Name, dep.Metadata.Name)
	}
	if hpa.MinReplicas < 2 || hpa.MaxReplicas < hpa.MinReplicas {
		t.Errorf("HPA replicas %d..%d", hpa.MinReplicas, hpa.MaxReplicas)
	}
	if !strings.HasPrefix(objs["HorizontalPodAutoscaler"].APIVersion, "autoscaling/v2") {
		t.Errorf("HPA apiVersion %s, want autoscaling/v2", objs["HorizontalPodAutoscaler"].APIVersion)
	}
}
