package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"golang.org/x/mod/modfile"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// root is the repository's root.
const root = ".."

// goVersion is the Go version a go.mod names, as major.minor.
func goVersion(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.ParseLax(file, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Go == nil {
		t.Fatalf("%s names no Go version", file)
	}
	parts := strings.SplitN(f.Go.Version, ".", 3)
	return parts[0] + "." + parts[1]
}

// dockerfile is the repository's Dockerfile, parsed by buildkit.
func dockerfile(t *testing.T) []instructions.Stage {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		t.Fatalf("the Dockerfile does not parse: %v", err)
	}
	stages, _, err := instructions.Parse(res.AST, nil)
	if err != nil {
		t.Fatalf("the Dockerfile's instructions do not parse: %v", err)
	}
	return stages
}

// TestDockerfile: two stages. The build stage is the Go image of the
// version go.mod names and builds ./cmd/codemode with cgo, its version
// stamped; the runtime stage is a C library image that runs the binary as
// a non-root user. Every file it copies from the context exists.
func TestDockerfile(t *testing.T) {
	stages := dockerfile(t)
	if len(stages) != 2 {
		t.Fatalf("%d stages, want the build and the runtime", len(stages))
	}
	build, run := stages[0], stages[1]
	for _, mod := range []string{"go.mod", "cmd/codemode/go.mod"} {
		v := goVersion(t, filepath.Join(root, mod))
		if want := "golang:" + v + "-"; !strings.HasPrefix(build.BaseName, want) {
			t.Errorf("the build stage is FROM %s: %s names Go %s (want %s…)", build.BaseName, mod, v, want)
		}
	}
	var built bool
	for _, c := range build.Commands {
		switch c := c.(type) {
		case *instructions.RunCommand:
			line := strings.Join(c.CmdLine, " ")
			if strings.Contains(line, "go build") && strings.Contains(line, "./cmd/codemode") {
				built = true
				for _, want := range []string{"CGO_ENABLED=1", "-X main.version=${VERSION}"} {
					if !strings.Contains(line, want) {
						t.Errorf("the build does not set %s: %s", want, line)
					}
				}
			}
		case *instructions.CopyCommand:
			checkSources(t, c)
		}
	}
	if !built {
		t.Error("no RUN builds ./cmd/codemode")
	}
	if !strings.HasPrefix(run.BaseName, "gcr.io/distroless/cc-") || !strings.HasSuffix(run.BaseName, ":nonroot") {
		t.Errorf("the runtime stage is FROM %s: want distroless's C library image, nonroot", run.BaseName)
	}
	var user string
	var copied bool
	var entry []string
	for _, c := range run.Commands {
		switch c := c.(type) {
		case *instructions.UserCommand:
			user = c.User
		case *instructions.CopyCommand:
			if c.From == build.Name && slices.Contains(c.SourcePaths, "/out/codemode") {
				copied = true
			}
		case *instructions.EntrypointCommand:
			entry = c.CmdLine
		}
	}
	if user == "" || strings.HasPrefix(user, "root") || strings.HasPrefix(user, "0") {
		t.Errorf("the image runs as %q: want a non-root user", user)
	}
	if !copied {
		t.Error("the runtime stage does not copy the built binary")
	}
	if len(entry) != 1 || filepath.Base(entry[0]) != "codemode" {
		t.Errorf("ENTRYPOINT %q: want the binary", entry)
	}
}

// checkSources fails for a COPY from the build context of a file that is
// not in the repository (a stage's copy is not the context's).
func checkSources(t *testing.T, c *instructions.CopyCommand) {
	t.Helper()
	if c.From != "" {
		return
	}
	for _, src := range c.SourcePaths {
		if src == "." {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, src)); err != nil {
			t.Errorf("COPY %s: %v", src, err)
		}
	}
}

// object is one document of a manifest, decoded as its kind's type.
type object struct {
	file string
	kind string
	v    any
}

// manifests decodes every document of deploy/kubernetes strictly (an
// unknown field is an error) as the k8s.io/api type its kind names.
func manifests(t *testing.T) []object {
	t.Helper()
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	types := map[string]func() any{
		"apps/v1 Deployment":                     func() any { return &appsv1.Deployment{} },
		"v1 Service":                             func() any { return &corev1.Service{} },
		"policy/v1 PodDisruptionBudget":          func() any { return &policyv1.PodDisruptionBudget{} },
		"autoscaling/v2 HorizontalPodAutoscaler": func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
		"batch/v1 Job":                           func() any { return &batchv1.Job{} },
		"v1 PersistentVolumeClaim":               func() any { return &corev1.PersistentVolumeClaim{} },
	}
	var objs []object
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if len(bytes.TrimSpace(regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAll(doc, nil))) == 0 {
				continue
			}
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &tm); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			key := tm.APIVersion + " " + tm.Kind
			mk, ok := types[key]
			if !ok {
				t.Errorf("%s: an object of %q, which this test does not know", file, key)
				continue
			}
			v := mk()
			if err := yaml.UnmarshalStrict(doc, v); err != nil {
				t.Errorf("%s: %s does not decode: %v", file, key, err)
				continue
			}
			objs = append(objs, object{file, tm.Kind, v})
		}
	}
	return objs
}

// TestManifests: the manifests decode as Kubernetes objects; the
// Deployment runs the image make image builds, serve's flags are ones the
// binary takes (with values it accepts), --memory-budget is set and a
// memory limit it is read from is; the HorizontalPodAutoscaler and the
// PodDisruptionBudget point at the Deployment.
func TestManifests(t *testing.T) {
	objs := manifests(t)
	var dep *appsv1.Deployment
	var hpa *autoscalingv2.HorizontalPodAutoscaler
	var pdb *policyv1.PodDisruptionBudget
	for _, o := range objs {
		switch v := o.v.(type) {
		case *appsv1.Deployment:
			dep = v
		case *autoscalingv2.HorizontalPodAutoscaler:
			hpa = v
		case *policyv1.PodDisruptionBudget:
			pdb = v
		}
	}
	if dep == nil || hpa == nil || pdb == nil {
		t.Fatalf("want a Deployment, a HorizontalPodAutoscaler and a PodDisruptionBudget: %v", objs)
	}
	if len(dep.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want the daemon's", len(dep.Spec.Template.Spec.Containers))
	}
	c := dep.Spec.Template.Spec.Containers[0]
	image := makeVar(t, "IMAGE")
	if repo, _, _ := strings.Cut(c.Image, ":"); repo != image {
		t.Errorf("the Deployment runs %s: make image builds %s", c.Image, image)
	}
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Fatalf("args %q: want codemode serve", c.Args)
	}
	if !slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--memory-budget=") }) {
		t.Error("serve is not given --memory-budget")
	}
	if lim, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok || lim.Cmp(resource.MustParse("256Mi")) < 0 {
		t.Errorf("the container's memory limit is %v: the budget is read from it", c.Resources.Limits)
	}
	if sc := c.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Error("the container does not require a non-root user")
	}
	if dep.Spec.Replicas != nil {
		t.Error("the Deployment sets replicas: the HorizontalPodAutoscaler does")
	}
	if ref := hpa.Spec.ScaleTargetRef; ref.Kind != "Deployment" || ref.Name != dep.Name {
		t.Errorf("the HorizontalPodAutoscaler scales %s %s", ref.Kind, ref.Name)
	}
	if !slices.ContainsFunc(hpa.Spec.Metrics, func(m autoscalingv2.MetricSpec) bool {
		return m.Resource != nil && m.Resource.Name == corev1.ResourceCPU
	}) {
		t.Error("the HorizontalPodAutoscaler does not scale on CPU")
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Errorf("the PodDisruptionBudget's selector %v does not select the Deployment's pods", pdb.Spec.Selector)
	}
	serveAccepts(t, c.Args)
}

// TestBatchJob: the batch Job runs the image make image builds, points
// --remote at the Deployment's headless Service, mounts the token the
// daemons want, writes to its volume, and passes codemode batch only
// flags it accepts.
func TestBatchJob(t *testing.T) {
	var job *batchv1.Job
	var svc *corev1.Service
	for _, o := range manifests(t) {
		switch v := o.v.(type) {
		case *batchv1.Job:
			job = v
		case *corev1.Service:
			svc = v
		}
	}
	if job == nil || svc == nil {
		t.Fatal("want the batch Job and the daemons' Service")
	}
	c := job.Spec.Template.Spec.Containers[0]
	if repo, _, _ := strings.Cut(c.Image, ":"); repo != makeVar(t, "IMAGE") {
		t.Errorf("the Job runs %s", c.Image)
	}
	if svc.Spec.ClusterIP != "None" {
		t.Error("the daemons' Service is not headless: --remote would reach one pod")
	}
	want := fmt.Sprintf("--remote=dns:///%s:%d", svc.Name, svc.Spec.Ports[0].Port)
	if !slices.Contains(c.Args, want) {
		t.Errorf("args %q: want %s", c.Args, want)
	}
	if len(c.Args) == 0 || c.Args[0] != "batch" {
		t.Fatalf("args %q: want codemode batch", c.Args)
	}
	bin := buildCodemode(t)
	// Every flag and value taken: it gets as far as reading the token.
	missing := filepath.Join(t.TempDir(), "no-token")
	var run []string
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--remote-token-file=") {
			a = "--remote-token-file=" + missing
		}
		run = append(run, a)
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), bin, run...)
	cmd.Stderr = &stderr
	err := cmd.Run()
	if !strings.Contains(stderr.String(), "--remote-token-file: open "+missing) {
		t.Errorf("codemode %s: %v\n%s", strings.Join(run, " "), err, stderr.String())
	}
}

// serveAccepts runs the binary built from ./cmd/codemode with args (a
// file the token flag names replaced by one that does not exist, the
// listen address by loopback's): it gets as far as reading the token,
// which only a command line whose every flag and value it took does.
func serveAccepts(t *testing.T, args []string) {
	t.Helper()
	bin := buildCodemode(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	missing := filepath.Join(t.TempDir(), "no-token")
	var run []string
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "--token-file="):
			a = "--token-file=" + missing
		case strings.HasPrefix(a, "--listen="):
			a = "--listen=127.0.0.1:0"
		case strings.HasPrefix(a, "--metrics="):
			a = "--metrics=127.0.0.1:0"
		}
		run = append(run, a)
	}
	if !slices.ContainsFunc(run, func(a string) bool { return strings.HasPrefix(a, "--token-file=") }) {
		t.Fatal("serve is not given --token-file: it would listen beyond loopback without one")
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, run...)
	cmd.Stderr = &stderr
	err := cmd.Run()
	if !strings.Contains(stderr.String(), "--token-file: open "+missing) {
		t.Errorf("codemode %s: %v\n%s", strings.Join(run, " "), err, stderr.String())
	}
}

// buildCodemode builds ./cmd/codemode once per test binary and returns
// its path. Bounded: a build on a cold cache compiles the engine (a few
// minutes on two cores).
func buildCodemode(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "codemode-deploy")
		if err != nil {
			built.err = err
			return
		}
		built.bin = filepath.Join(dir, "codemode")
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		build := exec.CommandContext(ctx, "go", "build", "-o", built.bin, "./cmd/codemode")
		build.Dir = root
		build.Env = append(slices.DeleteFunc(os.Environ(), func(e string) bool { return strings.HasPrefix(e, "GOWORK=") }),
			"GOWORK=") // the repository's workspace, not this module's GOWORK=off
		if out, err := build.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build ./cmd/codemode: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// built is the binary buildCodemode made.
var built struct {
	once sync.Once
	bin  string
	err  error
}

// makeVar is the default of a variable the Makefile sets with ?=.
func makeVar(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + name + ` \?= (\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("the Makefile sets no %s", name)
	}
	return string(m[1])
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.bin != "" {
		os.RemoveAll(filepath.Dir(built.bin))
	}
	os.Exit(code)
}
