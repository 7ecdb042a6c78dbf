// Every Kubernetes object in deploy/ checked against the schema the API server holds for it:
// Kubernetes' own OpenAPI schemas (npm kubernetes-models), the Prometheus operator's CRDs
// (@kubernetes-models/prometheus-operator), and for the NetworkAttachmentDefinition and
// MPIJob CRDs the schemas in crds/ written from their upstream CRDs (an MPIJob's replica
// templates against core/v1 PodTemplateSpec). A wrong type, a missing required field or a
// value outside an enum fails here instead of at `kubectl apply`.
//
//   node validate_manifests.mjs DEPLOY_DIR       every object; exit 1 on the first file wrong
//   node validate_manifests.mjs --expect-invalid FILE...
//                                                each FILE must hold an object the schemas
//                                                reject (the validator's own test)
//
// Documents without apiVersion and kind (a fabric-pfc profile, Prometheus rule files) are
// not Kubernetes objects and are listed as skipped. Node and its packages come from
// scripts/setup.sh (npm ci into this folder's node_modules).
import { readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

async function loadDependencies() {
  try {
    const yaml = await import("yaml");
    const { default: Ajv } = await import("ajv");
    return { yaml, Ajv };
  } catch (e) {
    console.error(`validate_manifests: ${e.message}\n` +
                  "the schema packages are missing: run scripts/setup.sh");
    process.exit(2);
  }
}

const { yaml, Ajv } = await loadDependencies();
const ajv = new Ajv({ allErrors: true, strict: false });
ajv.addFormat("int32", { type: "number", validate: Number.isInteger });
ajv.addFormat("int64", { type: "number", validate: Number.isInteger });
const crdSchema = (file) => ajv.compile(JSON.parse(readFileSync(join(here, "crds", file), "utf8")));
const crdValidators = {
  "k8s.cni.cncf.io/v1/NetworkAttachmentDefinition": crdSchema("network-attachment-definition-v1.json"),
  "kubeflow.org/v2beta1/MPIJob": crdSchema("mpijob-v2beta1.json"),
};

// The module of kubernetes-models (or the operator's package) that holds a kind's model.
function modelModule(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  if (group === "monitoring.coreos.com")
    return `@kubernetes-models/prometheus-operator/${group}/${version}/${kind}`;
  return group === "" ? `kubernetes-models/${version}/${kind}`
                      : `kubernetes-models/${group}/${version}/${kind}`;
}

async function validateModel(module, kind, object) {
  let model;
  try {
    model = (await import(module))[kind];
  } catch {
    return [`no schema for ${object.apiVersion} ${kind}`];
  }
  try {
    new model(object).validate();
    return [];
  } catch (e) {
    return [e.message];
  }
}

function ajvErrors(validate) {
  return validate.errors.map((e) => `${e.instancePath || "/"} ${e.message}` +
                                    (e.params?.additionalProperty ? ` (${e.params.additionalProperty})` : ""));
}

// The messages for one object; empty when it is valid.
async function validateObject(object) {
  const crd = crdValidators[`${object.apiVersion}/${object.kind}`];
  if (!crd) return validateModel(modelModule(object.apiVersion, object.kind), object.kind, object);
  if (!crd(object)) return ajvErrors(crd);
  const errors = [];
  if (object.kind === "MPIJob") {
    for (const [replica, spec] of Object.entries(object.spec.mpiReplicaSpecs)) {
      for (const message of await validateModel("kubernetes-models/v1/PodTemplateSpec",
                                                "PodTemplateSpec", spec.template ?? {}))
        errors.push(`mpiReplicaSpecs.${replica}.template: ${message}`);
    }
  }
  return errors;
}

// Kubernetes reads manifests as YAML 1.1 (0400 is octal, yes/no are booleans).
function documentsOf(path) {
  return yaml.parseAllDocuments(readFileSync(path, "utf8"), { version: "1.1" }).map((doc) => {
    if (doc.errors.length) throw new Error(`${path}: ${doc.errors[0].message}`);
    return doc.toJS();
  });
}

function yamlFilesUnder(dir) {
  return readdirSync(dir).sort().flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return yamlFilesUnder(path);
    return /\.ya?ml$/.test(name) ? [path] : [];
  });
}

const isObject = (doc) => doc && typeof doc === "object" && doc.apiVersion && doc.kind;

async function validateDeploy(deployDir) {
  let checked = 0;
  let failed = 0;
  for (const path of yamlFilesUnder(deployDir)) {
    const name = relative(deployDir, path);
    const docs = documentsOf(path);
    if (!docs.some(isObject)) {
      console.log(`skipped ${name}: not a Kubernetes manifest`);
      continue;
    }
    for (const doc of docs.filter((d) => d !== null)) {
      if (!isObject(doc)) {
        console.log(`FAIL ${name}: a document without apiVersion and kind`);
        ++failed;
        continue;
      }
      const errors = await validateObject(doc);
      const what = `${name}: ${doc.kind} ${doc.metadata?.name}`;
      if (errors.length) {
        console.log(`FAIL ${what}\n  ${errors.join("\n  ")}`);
        ++failed;
      } else {
        console.log(`ok ${what}`);
      }
      ++checked;
    }
  }
  console.log(`${checked} objects checked, ${failed} invalid`);
  return failed === 0 && checked > 0;
}

async function expectInvalid(files) {
  let ok = true;
  for (const path of files) {
    for (const doc of documentsOf(path).filter(isObject)) {
      const errors = await validateObject(doc);
      if (errors.length) {
        console.log(`rejected as expected ${path}: ${errors[0]}`);
      } else {
        console.log(`FAIL ${path}: ${doc.kind} ${doc.metadata?.name} was accepted`);
        ok = false;
      }
    }
  }
  return ok;
}

const args = process.argv.slice(2);
if (args.length === 0) {
  console.error("usage: validate_manifests.mjs DEPLOY_DIR | --expect-invalid FILE...");
  process.exit(2);
}
const ok = args[0] === "--expect-invalid" ? await expectInvalid(args.slice(1))
                                           : await validateDeploy(args[0]);
process.exit(ok ? 0 : 1);
