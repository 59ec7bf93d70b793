//! The OpenAPI 3.1 document, built from the same route table that builds the router: a route
//! cannot be served without being described, and every schema comes from the message types the
//! handlers read and write.

use axum::routing::MethodRouter;
use axum::Router;
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{json, Map, Value};

use super::error::ErrorBody;

type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

fn schema_of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

fn root_schema_of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.root_schema_for::<T>()
}

/// What one operation takes and gives, for its entry in the document.
pub struct Operation {
    id: &'static str,
    summary: &'static str,
    body: Option<SchemaFn>,
    answer: Option<SchemaFn>,
    query: Option<SchemaFn>,
    integer_params: &'static [&'static str],
    tag: &'static str,
}

impl Operation {
    pub fn new(tag: &'static str, id: &'static str, summary: &'static str) -> Self {
        Operation {
            id,
            summary,
            body: None,
            answer: None,
            query: None,
            integer_params: &[],
            tag,
        }
    }

    /// The JSON body it reads.
    pub fn body<T: JsonSchema>(mut self) -> Self {
        self.body = Some(schema_of::<T>);
        self
    }

    /// The JSON body of its 200 answer.
    pub fn answer<T: JsonSchema>(mut self) -> Self {
        self.answer = Some(schema_of::<T>);
        self
    }

    /// Its query parameters: the properties of `T`, all optional.
    pub fn query<T: JsonSchema>(mut self) -> Self {
        self.query = Some(root_schema_of::<T>);
        self
    }

    /// Path parameters that are integers (the others are strings).
    pub fn integer_params(mut self, names: &'static [&'static str]) -> Self {
        self.integer_params = names;
        self
    }
}

/// Routes and their description, built together.
pub struct DocumentedRouter<S> {
    router: Router<S>,
    generator: SchemaGenerator,
    paths: Map<String, Value>,
}

impl<S: Clone + Send + Sync + 'static> DocumentedRouter<S> {
    pub fn new() -> Self {
        let generator = SchemaSettings::draft2020_12()
            .with(|s| s.definitions_path = "#/components/schemas/".into())
            .into_generator();
        DocumentedRouter {
            router: Router::new(),
            generator,
            paths: Map::new(),
        }
    }

    /// Serves `handler` (one method) at `path` and describes it as `operation`.
    pub fn route(
        mut self,
        method: &'static str,
        path: &'static str,
        operation: Operation,
        handler: MethodRouter<S>,
    ) -> Self {
        let entry = self.describe(path, operation);
        self.paths
            .entry(path.to_string())
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .expect("path items are objects")
            .insert(method.to_string(), entry);
        self.router = self.router.route(path, handler);
        self
    }

    fn describe(&mut self, path: &str, operation: Operation) -> Value {
        let mut parameters: Vec<Value> = path_params(path)
            .map(|name| {
                let schema = if operation.integer_params.contains(&name) {
                    json!({"type": "integer", "format": "uint64", "minimum": 0})
                } else {
                    json!({"type": "string", "minLength": 1})
                };
                json!({"name": name, "in": "path", "required": true, "schema": schema})
            })
            .collect();
        if let Some(query) = operation.query {
            let schema = query(&mut self.generator).to_value();
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (name, property) in properties {
                    let mut property = property.clone();
                    let description = property
                        .as_object_mut()
                        .and_then(|p| p.remove("description"));
                    let mut parameter = json!({
                        "name": name, "in": "query", "required": false, "schema": property,
                    });
                    if let Some(description) = description {
                        parameter["description"] = description;
                    }
                    parameters.push(parameter);
                }
            }
        }
        let error = json!({
            "description": "Refused or failed; `code` names the reason.",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
        });
        let ok = match operation.answer {
            Some(answer) => json!({
                "description": "Done.",
                "content": {"application/json": {"schema": answer(&mut self.generator).to_value()}},
            }),
            None => json!({"description": "Done."}),
        };
        let mut entry = json!({
            "operationId": operation.id,
            "summary": operation.summary,
            "tags": [operation.tag],
            "responses": {"200": ok, "default": error},
        });
        if !parameters.is_empty() {
            entry["parameters"] = Value::Array(parameters);
        }
        if let Some(body) = operation.body {
            entry["requestBody"] = json!({
                "required": false,
                "content": {"application/json": {"schema": body(&mut self.generator).to_value()}},
            });
        }
        entry
    }

    /// The router and the finished document.
    pub fn finish(mut self, version: &str) -> (Router<S>, Value) {
        let error = self.generator.subschema_for::<ErrorBody>();
        debug_assert!(error.get("$ref").is_some());
        let schemas = self.generator.take_definitions(true);
        let document = json!({
            "openapi": "3.1.0",
            "info": {
                "title": "Hindsight",
                "version": version,
                "description": "Memory for LLM agents: write, recall, trace, review. The same \
                    service as the gRPC API (proto/hindsight/v1), with the same rights and limits.",
            },
            "paths": self.paths,
            "components": {
                "schemas": schemas,
                "securitySchemes": {
                    "apiKey": {"type": "http", "scheme": "bearer", "description": "hs_<id>_<secret>, when the node has [auth] enabled."},
                },
            },
            "security": [{"apiKey": []}, {}],
        });
        (self.router, document)
    }
}

fn path_params(path: &str) -> impl Iterator<Item = &str> {
    path.split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
}
