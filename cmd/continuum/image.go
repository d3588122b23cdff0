package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/kubernetes/image"
)

func init() { commands = append(commands, newImageCmd) }

func newImageCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "image",
		Short: "Container images of Continuum's components, built without a Docker daemon",
		Example: `  continuum image build --out images/
  ctr -n k8s.io images import images/continuum.tar`,
	}
	c.AddCommand(newImageBuildCmd())
	return c
}

func newImageBuildCmd() *cobra.Command {
	cfg := image.DefaultConfig()
	var fl bool
	about := ""
	for _, i := range image.Images {
		about += fmt.Sprintf("\n  %-9s %s: %s", i.Name, i.Repos, i.About)
	}
	c := &cobra.Command{
		Use:   "build [--out DIR] [--images NAME,...] [--fl]",
		Short: "Build reproducible OCI images into OCI layout tarballs (<out>/<image>.tar)",
		Long: `Builds the images as OCI image layout tarballs that containerd imports (ctr images import) and
registry tools push: reproducible (entries sorted, times set to $SOURCE_DATE_EPOCH or 0, so the same
inputs give the same digests), running as the unprivileged user 65532. The binaries are built with
CGO_ENABLED=0 and -trimpath unless given; the Python images take this host's python3 and the venvs
make setup builds. The images:` + about + `

Prints each image's name and digest. See docs/kubernetes.md ("Images").`,
		Example: `  continuum image build --out images/
  continuum image build --images continuum --continuum-binary bin/continuum-static --tag dev
  continuum image build --fl --out images/        # also the FL image (about 1.7 GB)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if fl {
				cfg.Images = append(cfg.Images, "fl")
			}
			var err error
			if cfg.Epoch, err = image.EpochFromEnv(); err != nil {
				return err
			}
			if cfg.Root == "" {
				if cfg.Root, err = os.Getwd(); err != nil {
					return err
				}
			}
			cfg.Logf = func(format string, args ...any) { fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", args...) }
			res, err := image.Run(cmd.Context(), cfg)
			for _, r := range res {
				for _, i := range r.Images {
					fmt.Fprintf(cmd.OutOrStdout(), "%s\t%s\t%s\n", r.Tarball, i.Ref, i.Digest)
				}
				for _, m := range r.Missing {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: left out, not on this host: %s\n", r.Tarball, m)
				}
			}
			return err
		},
	}
	f := c.Flags()
	f.StringVar(&cfg.Out, "out", cfg.Out, "directory the tarballs go to")
	f.StringSliceVar(&cfg.Images, "images", cfg.Images, "images to build: continuum, proxy, python, fl")
	f.BoolVar(&fl, "fl", false, "also build the FL image (.tools/venv-fl and Debian's PyTorch: about 1.7 GB)")
	f.StringVar(&cfg.Repository, "repository", cfg.Repository, "prefix of the images' repositories (a registry host may lead it)")
	f.StringVar(&cfg.Tag, "tag", cfg.Tag, "tag of every image (the chart's appVersion by default)")
	f.StringVar(&cfg.ContinuumBinary, "continuum-binary", "", "static continuum binary to use (default: build one)")
	f.StringVar(&cfg.ProxyBinary, "proxy-binary", "", "static continuum-proxy binary to use (default: build one)")
	f.StringVar(&cfg.Root, "root", "", "the clone: cmd/, python/, .tools/venv* (default: the working directory)")
	return c
}
