// Holds the client against a node's OpenAPI document: every route of ROUTES (src/routes.ts) must be
// in the document with that method, path parameters, query parameters, body and answer schema,
// and every interface in src/types.ts named after a schema the client sends or reads must have
// exactly that schema's fields, its required ones not optional.
//
//   node test/openapi-check.mjs http://127.0.0.1:7401   # prints what differs, exits 1 if anything

import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import ts from "typescript";

import { ROUTES } from "../dist/index.js";

const TYPES = resolve(dirname(fileURLToPath(import.meta.url)), "../src/types.ts");

/** The interfaces of src/types.ts: name → field name → whether the field is optional. */
export function readInterfaces(path = TYPES) {
  const source = ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.ES2022, true);
  const interfaces = new Map();
  for (const statement of source.statements) {
    if (!ts.isInterfaceDeclaration(statement)) continue;
    const fields = new Map();
    for (const member of statement.members) {
      if (ts.isPropertySignature(member) && member.name) {
        fields.set(member.name.getText(source).replace(/^["']|["']$/g, ""), member.questionToken !== undefined);
      }
    }
    interfaces.set(statement.name.text, fields);
  }
  return interfaces;
}

function refName(schema) {
  const ref = schema?.$ref;
  return typeof ref === "string" ? ref.split("/").pop() : undefined;
}

function jsonSchemaOf(content) {
  return content?.["application/json"]?.schema;
}

/** Schema names a schema refers to, at any depth. */
function refsIn(schema, found = new Set()) {
  if (Array.isArray(schema)) {
    for (const item of schema) refsIn(item, found);
  } else if (schema && typeof schema === "object") {
    const name = refName(schema);
    if (name) found.add(name);
    for (const [key, value] of Object.entries(schema)) {
      if (key !== "$ref") refsIn(value, found);
    }
  }
  return found;
}

/** What differs between the client and the document, one line each; empty when they agree. */
export function checkClient(document, { routes = ROUTES, interfaces = readInterfaces() } = {}) {
  const problems = [];
  const schemas = document?.components?.schemas ?? {};
  const sent = new Set();
  const read = new Set();

  for (const [name, route] of Object.entries(routes)) {
    const where = `${route.method} ${route.path} (${name})`;
    if (!route.documented) {
      if (route.path.startsWith("/v1/")) problems.push(`${where}: a /v1 route must be documented`);
      continue;
    }
    const item = document?.paths?.[route.path];
    const op = item?.[route.method.toLowerCase()];
    if (!op) {
      const others = item ? Object.keys(item).map((m) => m.toUpperCase()).join(", ") : "";
      problems.push(`${where}: not in the document${others ? ` (the path takes ${others})` : ""}`);
      continue;
    }
    if (op.operationId !== route.operation) {
      problems.push(`${where}: the document's operationId is ${op.operationId}, the client's ${route.operation}`);
    }

    const parameters = op.parameters ?? [];
    const docPath = new Set(parameters.filter((p) => p.in === "path").map((p) => p.name));
    const clientPath = new Set([...route.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]));
    for (const p of clientPath) if (!docPath.has(p)) problems.push(`${where}: path parameter ${p} is not in the document`);
    for (const p of docPath) if (!clientPath.has(p)) problems.push(`${where}: the document's path parameter ${p} is not filled by the client`);

    const docQuery = new Map(parameters.filter((p) => p.in === "query").map((p) => [p.name, p]));
    if (route.query !== undefined) {
      const fields = interfaces.get(route.query);
      if (!fields) {
        problems.push(`${where}: no interface ${route.query} in src/types.ts for its query`);
      } else {
        for (const [field, optional] of fields) {
          if (!docQuery.has(field)) problems.push(`${where}: query parameter ${field} (${route.query}) is not in the document`);
          else if (docQuery.get(field).required && optional) {
            problems.push(`${where}: query parameter ${field} is required by the document, optional in ${route.query}`);
          }
        }
        for (const p of docQuery.keys()) {
          if (!fields.has(p)) problems.push(`${where}: the document's query parameter ${p} is missing from ${route.query}`);
        }
      }
    } else if (docQuery.size > 0) {
      problems.push(`${where}: the document takes query parameters ${[...docQuery.keys()].join(", ")}; the client sends none`);
    }

    const docBody = refName(jsonSchemaOf(op.requestBody?.content));
    if (route.body !== docBody) {
      problems.push(`${where}: the document's body is ${docBody ?? "none"}, the client's ${route.body ?? "none"}`);
    }
    if (route.body !== undefined) sent.add(route.body);

    const docAnswer = refName(jsonSchemaOf(op.responses?.["200"]?.content));
    if (route.answer !== docAnswer) {
      problems.push(`${where}: the document's answer is ${docAnswer ?? "none"}, the client's ${route.answer ?? "none"}`);
    }
    if (route.answer !== undefined) read.add(route.answer);
  }
  read.add("ErrorBody");

  // Every schema the client sends or reads, with those they refer to, must match an interface.
  const closure = (roots) => {
    const all = new Set();
    const queue = [...roots];
    while (queue.length > 0) {
      const name = queue.pop();
      if (all.has(name) || !schemas[name]) continue;
      all.add(name);
      queue.push(...refsIn(schemas[name]));
    }
    return all;
  };
  const requests = closure(sent);
  for (const name of new Set([...requests, ...closure(read)])) {
    const schema = schemas[name];
    const fields = interfaces.get(name);
    if (!fields) {
      problems.push(`schema ${name}: no interface ${name} in src/types.ts`);
      continue;
    }
    const properties = schema.properties ?? {};
    for (const field of fields.keys()) {
      if (!(field in properties)) problems.push(`${name}.${field}: not a field of the document's ${name}`);
    }
    for (const field of Object.keys(properties)) {
      if (!fields.has(field)) problems.push(`${name}.${field}: a field of the document missing from the client's ${name}`);
    }
    for (const field of schema.required ?? []) {
      if (requests.has(name) && fields.get(field) === true) {
        problems.push(`${name}.${field}: required by the document, optional in the client's ${name}`);
      }
    }
  }
  for (const name of [...sent, ...read]) {
    if (!schemas[name]) problems.push(`schema ${name}: not in the document's components`);
  }
  return problems;
}

export async function fetchDocument(baseUrl) {
  const answer = await fetch(`${baseUrl.replace(/\/+$/, "")}/openapi.json`, { signal: AbortSignal.timeout(10_000) });
  if (answer.status !== 200) throw new Error(`GET /openapi.json answered ${answer.status}`);
  return answer.json();
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const baseUrl = process.argv[2] ?? process.env.HINDSIGHT_URL ?? "http://127.0.0.1:7401";
  const problems = checkClient(await fetchDocument(baseUrl));
  for (const p of problems) console.log(p);
  console.log(problems.length === 0 ? `the client agrees with ${baseUrl}/openapi.json` : `${problems.length} differences`);
  process.exitCode = problems.length === 0 ? 0 : 1;
}
