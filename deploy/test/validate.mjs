// Offline checks of deploy/, run by ctest as deploy_manifests:
//   node deploy/test/validate.mjs TENSORTUNE_BINARY
// 1. Every Kubernetes manifest parses and validates against the Kubernetes API schemas
//    (kubernetes-models, from npm); the overlays' patches name objects the base has, and
//    where kubectl is installed the built overlays validate too.
// 2. The compose file parses and its services, secrets and volumes refer to each other.
// 3. Every tensortune command line in the manifests, the compose file and the systemd units
//    uses flags that the binary's `--help` for that subcommand lists.
// 4. No token in plain text: no Secret objects with data, no --token flag values.
// Exits 0 when all hold, 1 naming each failure, 77 (skip) when the npm packages are missing.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const deploy = join(here, "..");
const binary = process.argv[2];
if (!binary || !existsSync(binary)) {
  console.error("usage: node validate.mjs TENSORTUNE_BINARY");
  process.exit(2);
}
let YAML;
try {
  YAML = await import("yaml");
  await import("kubernetes-models/v1");
} catch (e) {
  console.error("deploy_manifests: SKIPPED: the npm packages are not installed (run: npm " +
                "install --prefix deploy/test): " + e.message);
  process.exit(77);
}

const failures = [];
const fail = (where, what) => failures.push(`${where}: ${what}`);

function files(dir, pattern) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (name === "node_modules") continue;
    if (statSync(path).isDirectory()) out.push(...files(path, pattern));
    else if (pattern.test(name)) out.push(path);
  }
  return out.sort();
}

function parseAll(path) {
  const docs = YAML.parseAllDocuments(readFileSync(path, "utf8"));
  const out = [];
  for (const d of docs) {
    if (d.errors.length) fail(relative(deploy, path), "YAML: " + d.errors[0].message);
    else if (d.toJSON() !== null) out.push(d.toJSON());
  }
  return out;
}

// apiVersion "apps/v1" -> kubernetes-models/apps/v1, "v1" -> kubernetes-models/v1.
async function validateObject(where, obj) {
  if (!obj || typeof obj !== "object" || !obj.apiVersion || !obj.kind) {
    fail(where, "not a Kubernetes object (apiVersion and kind)");
    return;
  }
  if (obj.kind === "Secret" && (obj.data || obj.stringData))
    fail(where, `Secret ${obj.metadata?.name} holds data: secrets are the operator's, never committed`);
  let mod;
  try {
    mod = await import("kubernetes-models/" + obj.apiVersion);
  } catch (e) {
    fail(where, `unknown apiVersion ${obj.apiVersion}`);
    return;
  }
  const Kind = mod[obj.kind];
  if (!Kind) {
    fail(where, `unknown kind ${obj.kind} in ${obj.apiVersion}`);
    return;
  }
  try {
    new Kind(obj).validate();
  } catch (e) {
    fail(where, `${obj.kind} ${obj.metadata?.name}: ${e.message.split("\n").slice(0, 4).join(" ")}`);
  }
}

// --- 1. Kubernetes
const k8s = join(deploy, "kubernetes");
const baseDir = join(k8s, "base");
const baseObjects = [];
let validated = 0;
const baseKustomization = YAML.parse(readFileSync(join(baseDir, "kustomization.yaml"), "utf8"));
for (const resource of baseKustomization.resources) {
  const path = join(baseDir, resource);
  if (!existsSync(path)) {
    fail("kubernetes/base/kustomization.yaml", `resource ${resource} does not exist`);
    continue;
  }
  for (const obj of parseAll(path)) {
    await validateObject(relative(deploy, path), obj);
    baseObjects.push(obj);
    ++validated;
  }
}
const has = (kind, name) => baseObjects.some(o => o.kind === kind && o.metadata?.name === name);
for (const overlay of readdirSync(join(k8s, "overlays"))) {
  const dir = join(k8s, "overlays", overlay);
  const where = `kubernetes/overlays/${overlay}`;
  const kz = YAML.parse(readFileSync(join(dir, "kustomization.yaml"), "utf8"));
  for (const resource of kz.resources ?? []) {
    const path = join(dir, resource);
    if (!existsSync(path)) fail(where, `resource ${resource} does not exist`);
    else if (statSync(path).isFile())
      for (const obj of parseAll(path)) await validateObject(`${where}/${resource}`, obj), ++validated;
  }
  for (const patch of kz.patches ?? []) {
    if (patch.path) {
      const [obj] = parseAll(join(dir, patch.path));
      if (!obj || !has(obj.kind, obj.metadata?.name))
        fail(`${where}/${patch.path}`, `patches ${obj?.kind} ${obj?.metadata?.name}, which the base lacks`);
    }
    if (patch.target && !has(patch.target.kind, patch.target.name))
      fail(where, `a patch targets ${patch.target.kind} ${patch.target.name}, which the base lacks`);
  }
  // The built overlay, where kubectl can build it offline (kubectl kustomize needs no server).
  let built = null;
  try {
    built = execFileSync("kubectl", ["kustomize", dir], {encoding: "utf8", stdio: ["ignore", "pipe", "pipe"]});
  } catch (e) {
    if (e.code !== "ENOENT") fail(where, "kubectl kustomize: " + (e.stderr || e.message).trim());
  }
  if (built)
    for (const d of YAML.parseAllDocuments(built)) {
      await validateObject(`${where} (built)`, d.toJSON());
      ++validated;
    }
}

// --- 2. Compose
const composePath = join(deploy, "compose", "compose.yaml");
const compose = YAML.parse(readFileSync(composePath, "utf8"), {merge: true});
for (const [name, service] of Object.entries(compose.services ?? {})) {
  if (!Array.isArray(service.command)) fail(`compose ${name}`, "command is not a list");
  for (const s of service.secrets ?? [])
    if (!compose.secrets?.[s]) fail(`compose ${name}`, `secret ${s} is not declared`);
  for (const v of service.volumes ?? []) {
    const source = String(v).split(":")[0];
    if (!source.startsWith("/") && !source.startsWith(".") && !(source in (compose.volumes ?? {})))
      fail(`compose ${name}`, `volume ${source} is not declared`);
  }
  for (const d of service.depends_on ?? [])
    if (!compose.services[d]) fail(`compose ${name}`, `depends on unknown service ${d}`);
}

// --- 3. Flags
const commandLines = [];  // {where, args}
const collect = (where, obj) => {
  if (!obj || typeof obj !== "object") return;
  if (Array.isArray(obj.containers))
    for (const c of obj.containers) if (c.args) commandLines.push({where: `${where} ${c.name}`, args: c.args.map(String)});
  for (const v of Object.values(obj)) collect(where, v);
};
for (const obj of baseObjects) collect(`kubernetes ${obj.kind} ${obj.metadata?.name}`, obj);
for (const path of files(join(k8s, "overlays"), /\.yaml$/))
  for (const obj of parseAll(path)) collect(relative(deploy, path), obj);
for (const [name, service] of Object.entries(compose.services ?? {}))
  commandLines.push({where: `compose ${name}`, args: service.command.map(String)});
for (const path of files(join(deploy, "systemd"), /\.service$/)) {
  const text = readFileSync(path, "utf8").replace(/\\\n/g, " ");
  const line = text.split("\n").find(l => l.startsWith("ExecStart="));
  if (!line) { fail(relative(deploy, path), "no ExecStart"); continue; }
  const words = line.slice("ExecStart=".length).trim().split(/\s+/);
  commandLines.push({where: relative(deploy, path), args: words.slice(1)});
}
const helpOf = new Map();
for (const {where, args} of commandLines) {
  const sub = args[0];
  if (!helpOf.has(sub)) {
    try {
      helpOf.set(sub, execFileSync(binary, [sub, "--help"], {encoding: "utf8"}));
    } catch (e) {
      fail(where, `tensortune ${sub} --help failed: it is not a subcommand`);
      helpOf.set(sub, "");
    }
  }
  const help = helpOf.get(sub);
  for (const a of args) {
    if (!a.startsWith("--")) continue;
    const flag = a.split("=")[0];
    if (!new RegExp(`(^|[\\s,])${flag.replace(/[-]/g, "\\-")}([\\s,=]|$)`, "m").test(help))
      fail(where, `tensortune ${sub} has no flag ${flag}`);
    if (flag === "--token") fail(where, "a token on the command line: use --token-file");
  }
}

if (failures.length) {
  console.error(`deploy_manifests: ${failures.length} failure(s):\n  ` + failures.join("\n  "));
  process.exit(1);
}
console.log(`deploy_manifests: ${validated} Kubernetes objects valid, ${commandLines.length} ` +
            `command lines use only flags tensortune accepts, compose consistent`);
