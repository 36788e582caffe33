//! The MCP tools and resources. Each tool is a use case the API offers, called as the
//! request's authenticated caller, with the API's limits and credits; it answers what the
//! API answers (as JSON text and as structured content), a preview as a JPEG image. A
//! refused call answers the API's error (its message and the fields in error) as a tool
//! error, which the assistant reads and can act on.

use std::collections::HashMap;
use std::sync::Arc;

use actix_web::{web, ResponseError};
use base64::Engine;
use reelfarm_domain::id::{JobId, LibraryId, TemplateId};
use reelfarm_domain::template::variable_by_key;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use super::upload;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::ids;
use crate::routes::jobs::JobJson;
use crate::routes::templates::TemplateJson;
use crate::services::{self, jobs::Created};
use crate::state::AppState;

/// Templates a listing answers (the newest first; `page` reaches the others).
const TEMPLATES_PER_PAGE: u32 = 100;
/// Where a template is as a resource.
const TEMPLATE_URI: &str = "reelfarm://templates/";

const INSTRUCTIONS: &str = "reelfarm renders videos from templates. list_templates, then describe_template to \
    learn a template's variables (values are given by variable name or id); render makes one video and answers \
    its job; job_status follows it until its status is `finished` and gives the video's address. preview_frame \
    shows a frame before anything is spent. Each video costs credits (one for up to a minute at up to 1080p).";

/// The handler of one MCP request.
#[derive(Clone)]
pub struct Tools {
    state: web::Data<AppState>,
}

/// What a tool answers.
enum Answer {
    Json(Value),
    Jpeg(Vec<u8>),
}

impl Tools {
    pub fn new(state: web::Data<AppState>) -> Tools {
        Tools { state }
    }

    async fn call(
        &self,
        caller: &Caller,
        left: &CancellationToken,
        name: &str,
        args: &Map<String, Value>,
    ) -> Result<Answer, ApiError> {
        let state = &self.state;
        let user = &caller.user.id;
        Ok(match name {
            "list_templates" => {
                let page = args.get("page").and_then(Value::as_u64).unwrap_or(1).max(1);
                let offset = (page - 1) * u64::from(TEMPLATES_PER_PAGE);
                let views = state.farm.templates(user, TEMPLATES_PER_PAGE, offset).await?;
                let listed = views.into_iter().map(|view| {
                    json!({
                        "id": view.record.id.to_string(),
                        "name": view.record.name.clone(),
                        "duration": view.record.duration_ms as f64 / 1000.0,
                        "variables": view.variables(state.backends.blobs()).len(),
                    })
                });
                Answer::Json(json!({ "templates": listed.collect::<Vec<_>>(), "page": page }))
            }
            "describe_template" => {
                let view = state.farm.template(user, &template_id(args)?).await?;
                Answer::Json(json!(TemplateJson::new(view, false, state)))
            }
            "render" => Answer::Json(self.render(caller, args).await?),
            "job_status" => {
                let view = state.farm.get(user, &job_id(args)?).await?;
                Answer::Json(json!(JobJson::of(&view, state)))
            }
            "cancel_job" => {
                let view = state.farm.cancel(user, &job_id(args)?).await?;
                Answer::Json(json!(JobJson::of(&view, state)))
            }
            "preview_frame" => {
                let id = template_id(args)?;
                let values = self.values_by_id(caller, &id, args).await?;
                let body = json!({ "t": args.get("t").cloned().unwrap_or(json!(0)), "values": values });
                let request = services::previews::preview_request(&body)?;
                Answer::Jpeg(services::previews::frame(state, caller, &id, request).await?)
            }
            "upload_file" => {
                let url = string(args, "url")?.ok_or_else(|| required("url"))?;
                let library = match string(args, "library_id")? {
                    Some(id) => Some(ids::in_field::<LibraryId>("library_id", id)?),
                    None => None,
                };
                let filename = string(args, "filename")?;
                let asset = upload::from_address(state, caller, url, filename, library, left).await?;
                Answer::Json(json!(crate::routes::objects::AssetJson::new(&asset, state)))
            }
            other => return Err(ApiError::not_found_field("name", &format!("Tool {other:?}"))),
        })
    }

    /// One video of template `template_id` with `values` (by variable name or id) and the
    /// options given: the job as created.
    async fn render(&self, caller: &Caller, args: &Map<String, Value>) -> Result<Value, ApiError> {
        let id = template_id(args)?;
        let values = self.values_by_id(caller, &id, args).await?;
        let mut options = Map::new();
        for name in ["quality", "format"] {
            if let Some(given) = args.get(name) {
                options.insert(name.into(), given.clone());
            }
        }
        let mut element = json!({ "template_variables": values });
        for name in ["title", "external_id"] {
            if let Some(given) = args.get(name) {
                element[name] = given.clone();
            }
        }
        let body = json!({ "template_id": id.as_str(), "options": options, "values": [element] });
        let state = &self.state;
        let respond = |job: &reelfarm_domain::job::JobRecord| {
            serde_json::to_string(&JobJson::new(job, &HashMap::new(), state)).expect("jobs serialize")
        };
        match services::jobs::create(state, caller, &body, None, respond).await? {
            Created::New(job) | Created::Replayed(job) => Ok(serde_json::from_str(&job).expect("a job's JSON")),
            Created::Quote(_) => Err(ApiError::invalid_request("a render is never a dry run")),
        }
    }

    /// `args.values`, keyed by variable name or id, keyed by id as a job's
    /// `template_variables` are; a key that names no variable is an error naming it.
    async fn values_by_id(
        &self,
        caller: &Caller,
        id: &TemplateId,
        args: &Map<String, Value>,
    ) -> Result<Map<String, Value>, ApiError> {
        let given = match args.get("values") {
            None | Some(Value::Null) => return Ok(Map::new()),
            Some(Value::Object(given)) => given,
            Some(_) => return Err(invalid("values", "must be an object of variable name or id to value")),
        };
        let variables = self.state.farm.template(&caller.user.id, id).await?.variables(self.state.backends.blobs());
        let mut values = Map::new();
        let mut errors = Vec::new();
        for (key, value) in given {
            match variable_by_key(&variables, key) {
                Ok(variable) => {
                    values.insert(variable.id.to_string(), value.clone());
                }
                Err(problem) => errors.push(problem_of(&format!("values.{key}"), problem)),
            }
        }
        if errors.is_empty() {
            Ok(values)
        } else {
            Err(ApiError::validation(errors))
        }
    }
}

fn problem_of(field: &str, message: String) -> crate::error::FieldError {
    crate::error::FieldError::new(field, reelfarm_domain::error_key::ErrorKey::Invalid, message)
}

fn invalid(field: &str, message: &str) -> ApiError {
    ApiError::validation(vec![problem_of(field, message.to_string())])
}

fn required(field: &str) -> ApiError {
    let problem = crate::error::FieldError::new(field, reelfarm_domain::error_key::ErrorKey::Required, "is required");
    ApiError::validation(vec![problem])
}

/// The string argument `name`, if given.
fn string<'a>(args: &'a Map<String, Value>, name: &str) -> Result<Option<&'a str>, ApiError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(invalid(name, "must be a string")),
    }
}

fn template_id(args: &Map<String, Value>) -> Result<TemplateId, ApiError> {
    ids::in_field("template_id", string(args, "template_id")?.ok_or_else(|| required("template_id"))?)
}

fn job_id(args: &Map<String, Value>) -> Result<JobId, ApiError> {
    ids::in_field("job_id", string(args, "job_id")?.ok_or_else(|| required("job_id"))?)
}

/// The caller the api authenticated for this request.
fn caller_of(context: &RequestContext<RoleServer>) -> Result<Arc<Caller>, ErrorData> {
    let parts = context.extensions.get::<http::request::Parts>();
    parts
        .and_then(|p| p.extensions.get::<Arc<Caller>>())
        .cloned()
        .ok_or_else(|| ErrorData::internal_error("the request was not authenticated", None))
}

/// Cancelled when the client of this request left before its answer.
fn client_left(context: &RequestContext<RoleServer>) -> CancellationToken {
    let parts = context.extensions.get::<http::request::Parts>();
    parts.and_then(|p| p.extensions.get::<super::ClientLeft>()).map(|left| left.0.clone()).unwrap_or_default()
}

/// A tool refused: the API's message (it names each field at fault), for the assistant
/// to read.
fn refused(e: &ApiError) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(e.body().message.clone())])
}

impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().enable_resources().build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("reelfarm", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(catalog()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = caller_of(&context)?;
        let left = client_left(&context);
        let args = request.arguments.unwrap_or_default();
        let result = match self.call(&caller, &left, &request.name, &args).await {
            Ok(Answer::Json(value)) => CallToolResult::structured(value),
            Ok(Answer::Jpeg(jpeg)) => {
                let data = base64::engine::general_purpose::STANDARD.encode(jpeg);
                CallToolResult::success(vec![ContentBlock::image(data, "image/jpeg")])
            }
            Err(e) if e.status_code().is_server_error() => {
                return Err(ErrorData::internal_error(e.body().message.clone(), None))
            }
            Err(e) => refused(&e),
        };
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let caller = caller_of(&context)?;
        let views = self.state.farm.templates(&caller.user.id, TEMPLATES_PER_PAGE, 0).await;
        let views = views.map_err(|e| ErrorData::internal_error(ApiError::from(e).body().message.clone(), None))?;
        let resources = views.into_iter().map(|view| {
            Resource::new(format!("{TEMPLATE_URI}{}", view.record.id), view.record.name.clone())
                .with_description("A template: its variables (types and limits) and its document")
                .with_mime_type("application/json")
        });
        Ok(ListResourcesResult::with_all_items(resources.collect()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let caller = caller_of(&context)?;
        let unknown = || ErrorData::resource_not_found(format!("no resource {}", request.uri), None);
        let id = request.uri.strip_prefix(TEMPLATE_URI).ok_or_else(unknown)?;
        let id = ids::in_path::<TemplateId>(id).map_err(|_| unknown())?;
        let view = self.state.farm.template(&caller.user.id, &id).await.map_err(|_| unknown())?;
        let text = serde_json::to_string(&TemplateJson::new(view, true, &self.state)).expect("templates serialize");
        let contents = ResourceContents::text(text, request.uri.clone()).with_mime_type("application/json");
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

/// Every tool, with the JSON Schema of its arguments.
fn catalog() -> Vec<Tool> {
    let template_id = json!({ "type": "string", "description": "Id of a template (list_templates)" });
    let job_id = json!({ "type": "string", "description": "Id of a job (render answers it)" });
    let values = json!({
        "type": "object",
        "description": "Value per variable, keyed by the variable's name or id: text, the address or asset id \
                        of a file, null for an image's placeholder, or an object such as \
                        {\"type\": \"rich-text\", \"value\": \"<b>Hi</b>\"}; variables not given keep the \
                        template's content",
        "additionalProperties": true,
    });
    let object = |properties: Value, required: &[&str]| {
        let schema = json!({ "type": "object", "properties": properties, "required": required });
        Arc::new(schema.as_object().expect("an object").clone())
    };
    let read_only = ToolAnnotations::new().read_only(true);
    vec![
        Tool::new(
            "list_templates",
            "The templates you may render, newest first: id, name, duration in seconds and number of variables",
            object(json!({ "page": { "type": "integer", "minimum": 1, "description": "Page of 100, from 1" } }), &[]),
        )
        .with_annotations(read_only.clone()),
        Tool::new(
            "describe_template",
            "One template: its variables (id, name, type, format, requirements such as lengths and sizes, \
             default) and clips",
            object(json!({ "template_id": template_id }), &["template_id"]),
        )
        .with_annotations(read_only.clone()),
        Tool::new(
            "render",
            "Renders one video of a template with the values given, costing its credits; answers the job (poll \
             job_status until its status is `finished`)",
            object(
                json!({
                    "template_id": template_id,
                    "values": values,
                    "quality": { "type": "string", "enum": ["default", "480p", "720p", "1080p"] },
                    "format": { "type": "string", "enum": ["mp4", "webm", "gif", "mov", "jpg", "png"] },
                    "title": { "type": "string" },
                    "external_id": { "type": "string", "description": "Your reference, echoed" },
                }),
                &["template_id"],
            ),
        ),
        Tool::new(
            "job_status",
            "A job: its status (`started`, `finished`, `cancelled`) and each video's status, progress (0–100), \
             address (`url`) and thumbnail",
            object(json!({ "job_id": job_id }), &["job_id"]),
        )
        .with_annotations(read_only.clone()),
        Tool::new(
            "cancel_job",
            "Cancels a job: videos not finished stop and their credits are refunded",
            object(json!({ "job_id": job_id }), &["job_id"]),
        )
        .with_annotations(ToolAnnotations::new().destructive(true)),
        Tool::new(
            "preview_frame",
            "The frame of a template at a time, with values applied, as a JPEG image; free",
            object(
                json!({
                    "template_id": template_id,
                    "t": { "type": "number", "minimum": 0, "description": "Time in seconds" },
                    "values": values,
                }),
                &["template_id", "t"],
            ),
        )
        .with_annotations(read_only),
        Tool::new(
            "upload_file",
            "Adds the file at a public address to one of your libraries (your personal one by default); answers \
             the asset, whose status becomes `finished` once it is converted",
            object(
                json!({
                    "url": { "type": "string", "description": "http(s) address of the file" },
                    "filename": { "type": "string", "description": "Name to give it (default: the address's)" },
                    "library_id": { "type": "string", "description": "A library you may edit" },
                }),
                &["url"],
            ),
        ),
    ]
}
