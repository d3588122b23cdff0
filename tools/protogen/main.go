// Command protogen generates the Go code of a .proto file with generators pinned in this module's
// go.mod, in one process and with nothing installed: protocompile (the parser buf is built on)
// compiles the .proto, and the protoc plugins protoc-gen-go and protoc-gen-go-vtproto run as
// libraries on the request protoc would have sent them. `make proto` runs it; `make test` runs it
// (proto-check) into a temporary directory and fails if the committed files differ.
//
// Usage: see the Makefile's PROTOGEN, which holds the flags the committed code was generated with.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/planetscale/vtprotobuf/generator"
	gengo "google.golang.org/protobuf/cmd/protoc-gen-go/internal_gengo"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"

	_ "github.com/planetscale/vtprotobuf/features/marshal"
	_ "github.com/planetscale/vtprotobuf/features/pool"
	_ "github.com/planetscale/vtprotobuf/features/size"
	_ "github.com/planetscale/vtprotobuf/features/unmarshal"
)

func main() {
	importPath := flag.String("I", ".", "directory the .proto files are named relative to (protoc's -I)")
	out := flag.String("out", ".", "directory the generated files are written under (protoc's --go_out)")
	module := flag.String("module", "", "Go module path stripped from output paths (protoc-gen-go's module=)")
	vtFeatures := flag.String("vtproto", "marshal+unmarshal+size", "protoc-gen-go-vtproto features, '+'-separated")
	var pool []string
	flag.Func("vtpool", "with -vtproto pool: messages to pool, as Go import path.Name patterns (repeatable)", func(s string) error {
		pool = append(pool, s)
		return nil
	})
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: protogen [flags] file.proto...")
		os.Exit(2)
	}
	if err := run(*importPath, *out, *module, *vtFeatures, pool, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "protogen:", err)
		os.Exit(1)
	}
}

func run(importPath, out, module, vtFeatures string, pool, files []string) error {
	c := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{importPath}}),
		SourceInfoMode: protocompile.SourceInfoStandard, // comments reach the generated code
	}
	compiled, err := c.Compile(context.Background(), files...)
	if err != nil {
		return fmt.Errorf("compile: %w", err)
	}
	req := &pluginpb.CodeGeneratorRequest{FileToGenerate: files}
	seen := map[string]bool{}
	for _, f := range compiled {
		req.ProtoFile = appendWithDeps(req.ProtoFile, f, seen)
	}
	param := ""
	if module != "" {
		param = "module=" + module
	}

	goReq := proto.Clone(req).(*pluginpb.CodeGeneratorRequest)
	goReq.Parameter = proto.String(param)
	if err := generate(goReq, out, func(gen *protogen.Plugin) error {
		for _, f := range gen.Files {
			if f.Generate {
				gengo.GenerateFile(gen, f)
			}
		}
		gen.SupportedFeatures = gengo.SupportedFeatures
		return nil
	}); err != nil {
		return fmt.Errorf("protoc-gen-go: %w", err)
	}

	vtReq := proto.Clone(req).(*pluginpb.CodeGeneratorRequest)
	vtReq.Parameter = proto.String(strings.TrimPrefix(param+",features="+vtFeatures, ","))
	var features string
	var flags flag.FlagSet
	flags.StringVar(&features, "features", "", "")
	if err := generate(vtReq, out, func(gen *protogen.Plugin) error {
		cfg := generator.Config{Poolable: generator.NewObjectSet(), PoolableExclude: generator.NewObjectSet()}
		for _, p := range pool {
			if err := cfg.Poolable.Set(p); err != nil {
				return fmt.Errorf("-vtpool %q: %w", p, err)
			}
		}
		g, err := generator.NewGenerator(gen, strings.Split(features, "+"), &cfg)
		if err != nil {
			return err
		}
		g.Generate()
		return nil
	}, protogen.Options{ParamFunc: flags.Set}); err != nil {
		return fmt.Errorf("protoc-gen-go-vtproto: %w", err)
	}
	return nil
}

// appendWithDeps adds f's descriptor after those of its imports, as protoc orders them.
func appendWithDeps(dst []*descriptorpb.FileDescriptorProto, f protoreflect.FileDescriptor, seen map[string]bool) []*descriptorpb.FileDescriptorProto {
	if seen[f.Path()] {
		return dst
	}
	seen[f.Path()] = true
	imports := f.Imports()
	for i := range imports.Len() {
		dst = appendWithDeps(dst, imports.Get(i).FileDescriptor, seen)
	}
	return append(dst, protodesc.ToFileDescriptorProto(f))
}

// generate runs one plugin on req and writes the files it returns under out.
func generate(req *pluginpb.CodeGeneratorRequest, out string, fn func(*protogen.Plugin) error, opts ...protogen.Options) error {
	var o protogen.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	gen, err := o.New(req)
	if err != nil {
		return err
	}
	if err := fn(gen); err != nil {
		return err
	}
	resp := gen.Response()
	if resp.Error != nil {
		return errors.New(resp.GetError())
	}
	for _, f := range resp.File {
		path := filepath.Join(out, filepath.FromSlash(f.GetName()))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(f.GetContent()), 0o644); err != nil {
			return err
		}
	}
	return nil
}
