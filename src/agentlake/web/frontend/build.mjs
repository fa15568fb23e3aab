// Builds ../static/app.js: every front-end module and its npm dependencies in one minified
// bundle the Python package serves (no CDN). The bundle's first line carries a hash of the
// sources and the lock file, so a test can tell when someone changed them without rebuilding.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { build } from "esbuild";

const hash = createHash("sha256");
for (const name of readdirSync("src").filter((file) => file.endsWith(".js")).sort()) {
  hash.update(name).update("\0").update(readFileSync(`src/${name}`)).update("\0");
}
hash.update(readFileSync("package-lock.json"));

await build({
  entryPoints: ["src/main.js"],
  bundle: true,
  minify: true,
  format: "iife",
  target: "es2020",
  legalComments: "linked",
  banner: { js: `/* agentlake dashboard; sources sha256:${hash.digest("hex")} */` },
  outfile: "../static/app.js",
  logLevel: "info",
});
