// The model client cannot send from outside the crate: a model is reached only through
// `converse_bound`, with the resources of an admitted attempt.
use thinkers::conversation::Message;
use thinkers::llm::{ChatRequest, ModelClient, WireTarget};

async fn unadmitted(client: &ModelClient, target: &WireTarget) {
    let request = ChatRequest::new("Answer.", vec![Message::user_text("Hi")]);
    let _ = client.send(target, &request).await;
}

fn main() {}
