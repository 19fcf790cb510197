// Command pulumi-sdkgen writes the SDK of a Pulumi package in one language, as `pulumi package add`
// does with that language's host, which the hosts the Go module proxy serves cannot do
// (localcluster/pulumi/README.md): Pulumi's own code generators (github.com/pulumi/pulumi/pkg/v3
// codegen/nodejs and codegen/go, at the CLI's pin), called the way the CLI and the host call them.
//
//	pulumi-sdkgen LANGUAGE SCHEMA.json OUT_DIR [DEPENDENCY_SCHEMA.json ...]
//
// LANGUAGE is nodejs or go. What happens is what pkg/v3 v3.276.0 `pulumi package add` does
// (cmd/pulumi/packages/packages.go InstallPackage and GenSDK), then the host's GeneratePackage
// (sdk/nodejs/cmd/pulumi-language-nodejs and sdk/go/pulumi-language-go main.go):
//   - the CLI binds the schema with dangling references allowed, sets SupportPack, and hands the
//     host the bound package re-marshalled as JSON, with no overlays, no local dependencies and
//     local=true;
//   - the host binds that JSON again with the CLI's loader and generates with its own tool name
//     ("pulumi-language-nodejs" / "pulumi-language-go", the header of every generated file);
//   - OUT_DIR is replaced by the files; `package add` writes it to <project>/sdks/<package>.
//
// The CLI's loader starts the plugin of each package the schema references and asks for its
// schema; here each DEPENDENCY_SCHEMA.json is what that plugin returned (`pulumi package
// get-schema <name>`), and any other package reference is refused.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/blang/semver"
	gogen "github.com/pulumi/pulumi/pkg/v3/codegen/go"
	"github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

// generators are each language's host's GeneratePackage call, with the host's tool name.
var generators = map[string]func(pkg *schema.Package, loader schema.ReferenceLoader) (map[string][]byte, error){
	"nodejs": func(pkg *schema.Package, loader schema.ReferenceLoader) (map[string][]byte, error) {
		return nodejs.GeneratePackage("pulumi-language-nodejs", pkg, nil, nil, true, loader)
	},
	"go": func(pkg *schema.Package, _ schema.ReferenceLoader) (map[string][]byte, error) {
		return gogen.GeneratePackage("pulumi-language-go", pkg, nil)
	},
}

// fileLoader serves the schemas given on the command line, by package name, as the CLI's plugin
// loader serves what each plugin returns (pkg/v3 codegen/schema/loader.go LoadPackageReferenceV2).
type fileLoader map[string][]byte

func (l fileLoader) LoadPackage(pkg string, version *semver.Version) (*schema.Package, error) {
	return l.LoadPackageV2(context.Background(), &schema.PackageDescriptor{Name: pkg, Version: version})
}

func (l fileLoader) LoadPackageV2(ctx context.Context, d *schema.PackageDescriptor) (*schema.Package, error) {
	ref, err := l.LoadPackageReferenceV2(ctx, d)
	if err != nil {
		return nil, err
	}
	return ref.Definition()
}

func (l fileLoader) LoadPackageReference(pkg string, version *semver.Version) (schema.PackageReference, error) {
	return l.LoadPackageReferenceV2(context.Background(), &schema.PackageDescriptor{Name: pkg, Version: version})
}

func (l fileLoader) LoadPackageReferenceV2(
	ctx context.Context, d *schema.PackageDescriptor,
) (schema.PackageReference, error) {
	if d.Name == "pulumi" {
		return schema.DefaultPulumiPackage.Reference(), nil
	}
	data, ok := l[d.Name]
	if !ok {
		return nil, fmt.Errorf("the schema references package %q: give its schema (pulumi package get-schema %s)",
			d.Name, d.Name)
	}
	var spec schema.PartialPackageSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, fmt.Errorf("schema of %s: %w", d.Name, err)
	}
	return schema.ImportPartialSpecWithContext(ctx, spec, nil, l)
}

// bind binds a schema as both the CLI and the host do: dangling references allowed, errors fatal.
func bind(data []byte, loader schema.Loader) (*schema.Package, error) {
	var spec schema.PackageSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, err
	}
	pkg, diags, err := schema.BindSpec(spec, loader, schema.ValidationOptions{AllowDanglingReferences: true})
	if err != nil {
		return nil, err
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return pkg, nil
}

func generate(language, schemaPath, out string, dependencies []string) error {
	gen, ok := generators[language]
	if !ok {
		return fmt.Errorf("language %q: give nodejs or go", language)
	}
	loader := fileLoader{}
	for _, path := range dependencies {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var named struct{ Name string }
		if err := json.Unmarshal(data, &named); err != nil || named.Name == "" {
			return fmt.Errorf("%s: not a package schema (no name): %v", path, err)
		}
		loader[named.Name] = data
	}
	data, err := os.ReadFile(schemaPath)
	if err != nil {
		return err
	}
	// The CLI: bind, SupportPack, re-marshal for the host.
	pkg, err := bind(data, loader)
	if err != nil {
		return fmt.Errorf("%s: %w", schemaPath, err)
	}
	pkg.SupportPack = true
	if data, err = pkg.MarshalJSON(); err != nil {
		return err
	}
	// The host: bind again, generate.
	cached := schema.NewCachedLoader(loader)
	if pkg, err = bind(data, cached); err != nil {
		return fmt.Errorf("%s (as the host receives it): %w", schemaPath, err)
	}
	files, err := gen(pkg, cached)
	if err != nil {
		return err
	}
	return write(out, files)
}

// write replaces out with files, as `pulumi package add` replaces <project>/sdks/<package>.
func write(out string, files map[string][]byte) error {
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	for name, content := range files {
		path := filepath.Join(out, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: pulumi-sdkgen nodejs|go SCHEMA.json OUT_DIR [DEPENDENCY_SCHEMA.json ...]")
		os.Exit(2)
	}
	if err := generate(os.Args[1], os.Args[2], os.Args[3], os.Args[4:]); err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-sdkgen: %v\n", err)
		os.Exit(1)
	}
}
