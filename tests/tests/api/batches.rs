//! Batches from a spreadsheet end to end, in both modes: a CSV file of 500 rows becomes
//! one job of 500 videos (its quote first), a small one renders, and bad files are
//! refused naming the row and the column.

use reelfarm_tests::{both_modes, error, json, Mode, TestApp};
use serde_json::{json, Value};

both_modes!(a_spreadsheet_becomes_one_job_of_a_video_per_row, bad_cells_are_named_by_row_and_column);

const NAME: &str = "55555555-5555-4555-8555-555555555555";

/// A 64×64, 0.5 s, 10 fps template with one text variable `Name` (2–20 characters).
async fn template(app: &TestApp) -> String {
    let dir = tempfile::tempdir().unwrap();
    let doc = json!({
        "version": 1,
        "name": "Batch",
        "canvas": { "width": 64, "height": 64, "fps": 10, "background": "#000000" },
        "clips": [{ "id": "only", "duration": 0.5, "layers": [{
            "id": "name", "kind": "text", "text": "<p>Hi</p>", "x": 0, "y": 0, "width": 64, "height": 64,
            "minimum_length": 2, "maximum_length": 20,
            "font": { "family": "Liberation Sans", "size": 12, "color": "#ffffff" },
            "variable": { "id": NAME, "name": "Name" }
        }] }]
    });
    let file = dir.path().join("batch.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    app.import_template(&file, None, true).await.id.to_string()
}

async fn post_csv(app: &TestApp, token: &str, template: &str, query: &str, csv: &str) -> reqwest::Response {
    let url = app.url(&format!("/generator/v1/templates/{template}/jobs{query}"));
    let req = app.client.post(url).bearer_auth(token).header("Content-Type", "text/csv; charset=utf-8");
    req.body(csv.to_string()).send().await.unwrap()
}

async fn a_spreadsheet_becomes_one_job_of_a_video_per_row(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let user = app.create_user("sheets", None, 600).await;
    let token = app.token_for(&user).await;
    let template = template(&app).await;
    // As a spreadsheet saves it: a byte order mark, semicolons, CRLF, a quoted cell.
    let rows: String = (0..500).map(|i| format!("Person {i};r{i};\"Take; {i}\"\r\n")).collect();
    let csv = format!("\u{feff}name;External_ID;title\r\n{rows}");

    let quote = json(post_csv(&app, &token, &template, "?dry_run=true", &csv).await, 200).await;
    assert_eq!((quote["dry_run"].as_bool(), quote["credits"].as_i64()), (Some(true), Some(500)), "{quote}");
    assert_eq!(quote["videos"].as_array().unwrap().len(), 500);

    let job = json(post_csv(&app, &token, &template, "?quality=480p&priority=low", &csv).await, 200).await;
    let videos = job["videos"].as_array().unwrap();
    assert_eq!(videos.len(), 500);
    assert_eq!((videos[7]["external_id"].as_str(), videos[7]["title"].as_str()), (Some("r7"), Some("Take; 7")));
    assert_eq!((job["quality"].as_str(), job["priority"].as_str()), (Some("480p"), Some("low")));
    let credits = json(app.get("/generator/v1/users/me/credits", &token).await, 200).await;
    assert_eq!(credits["credits"], 100, "{credits}");
    let cancelled = json(
        app.post_form(&format!("/generator/v1/jobs/{}/cancel", job["id"].as_str().unwrap()), &token, &[]).await,
        200,
    )
    .await;
    assert_eq!(cancelled["status"], "cancelled");

    // Two rows rendered, the second with the template's own text (an empty cell).
    let job = json(post_csv(&app, &token, &template, "", "Name,title\nAda,first\n,second\n").await, 200).await;
    let done = app.wait_for_job(&token, job["id"].as_str().unwrap()).await;
    let statuses: Vec<&Value> = done["videos"].as_array().unwrap().iter().map(|v| &v["status"]).collect();
    assert_eq!(statuses, [&json!("success"), &json!("success")], "{done}");
}

async fn bad_cells_are_named_by_row_and_column(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, token) = app.user_with_token("sheets").await;
    let template = template(&app).await;
    let fields = |body: &Value| -> Vec<(String, String)> {
        let errors = body["errors"].as_array().unwrap().iter();
        errors.map(|e| (e["field"].as_str().unwrap().into(), e["message"].as_str().unwrap().into())).collect()
    };

    let body =
        error(post_csv(&app, &token, &template, "", "Name\nAda\nX\nBob\n").await, 400, "error.validation_failed").await;
    let problems = fields(&body);
    assert_eq!(problems.len(), 1, "{body}");
    assert_eq!(problems[0].0, "values[1].Name");
    assert!(problems[0].1.starts_with("row 3: "), "{body}");

    let body =
        error(post_csv(&app, &token, &template, "", "Name,Price\nAda,3\n").await, 400, "error.validation_failed").await;
    assert_eq!(fields(&body)[0].0, "header", "{body}");
    let body =
        error(post_csv(&app, &token, &template, "?quality=4k", "Name\nAda\n").await, 400, "error.validation_failed")
            .await;
    assert_eq!(fields(&body)[0].0, "options.quality", "{body}");

    let url = app.url(&format!("/generator/v1/templates/{template}/jobs"));
    let res = app.client.post(&url).bearer_auth(&token).json(&json!({"Name": "Ada"})).send().await.unwrap();
    let body = error(res, 400, "error.invalid_request").await;
    assert!(body["message"].as_str().unwrap().contains("text/csv"), "{body}");
    let res = app.client.post(&url).header("Content-Type", "text/csv").body("Name\nAda\n").send().await.unwrap();
    error(res, 401, "error.unauthorized").await;
    let jobs = json(app.get("/generator/v1/jobs", &token).await, 200).await;
    assert_eq!(jobs, json!([]), "nothing was created");
}
