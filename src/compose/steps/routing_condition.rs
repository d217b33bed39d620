//! The `Routed` condition: whether the XR's external endpoint reaches it,
//! through the HTTPRoute or the Ingress it composed.
//!
//! The API server accepts a route to a Gateway that does not exist, or whose
//! listeners do not admit the route's namespace, and an Ingress whose class
//! no controller runs, and the Service still serves, so `Ready` stays; only
//! the controller says whether it took them: the Gateway's in the route's
//! and the InferencePool's `status.parents` (with a warning event when a
//! refusal first appears), an Ingress controller by giving the Ingress an
//! address. Crossplane keeps a condition a function stops returning, so an
//! XR that was routed is told when it no longer is.

use serde_json::{Map, Value};

use crate::compose::composition::{ComposeRequest, Composition};
use crate::compose::resources::ingress::INGRESS;
use crate::compose::steps::conditions::withdrawn;
use crate::compose::steps::inference_routing::{HTTP_ROUTE, INFERENCE_POOL};
use crate::compose::steps::serving::push_condition;
use crate::request::{applied_manifest, at, manifest_of, str_at};
use crate::response::{condition, condition_unknown};

pub(crate) const ROUTED: &str = "Routed";

/// Adds the `Routed` condition for the HTTPRoute or Ingress `out`
/// composes, if any.
pub(crate) fn report(req: &ComposeRequest, out: &mut Composition) {
    if out.resources.contains_key(HTTP_ROUTE) {
        report_route(req, out);
    } else if out.resources.contains_key(INGRESS) {
        report_ingress(req, out);
    } else {
        out.conditions.extend(withdrawn(
            req,
            condition(
                ROUTED,
                false,
                "NotRouted",
                "no Gateway is configured and spec.ingressHost is not set: it is reached through its Service",
            ),
        ));
    }
}

/// An Ingress is taken by its controller once the controller gives it an
/// address (`status.loadBalancer.ingress`); nothing else in its status says
/// so.
fn report_ingress(req: &ComposeRequest, out: &mut Composition) {
    let ingress = out.resources[INGRESS].manifest.object();
    let ingress = applied_manifest(ingress).unwrap_or(ingress);
    let what = format!(
        "Ingress {}/{}",
        str_at(ingress, &["metadata", "namespace"]),
        str_at(ingress, &["metadata", "name"])
    );
    let check = match str_at(ingress, &["spec", "ingressClassName"]) {
        "" => "that the cluster has a default IngressClass and that its controller runs: kubectl get ingressclass"
            .to_string(),
        class => format!("that IngressClass {class} exists and that its controller runs: kubectl get ingressclass {class}"),
    };
    let observed = req.observed.get(INGRESS);
    let addresses: Vec<&str> = observed
        .as_ref()
        .and_then(|o| manifest_of(o))
        .and_then(|o| at(o, &["status", "loadBalancer", "ingress"]))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .map(|a| match str_at(a, &["ip"]) {
            "" => str_at(a, &["hostname"]),
            ip => ip,
        })
        .filter(|a| !a.is_empty())
        .collect();
    out.conditions.push(if addresses.is_empty() {
        condition_unknown(
            ROUTED,
            "NoAddress",
            format!(
                "no Ingress controller has given {what} an address yet (if this lasts, check {check})"
            ),
        )
    } else {
        condition(
            ROUTED,
            true,
            "Addressed",
            format!("its Ingress controller serves {what} at {}", addresses.join(", ")),
        )
    });
}

/// The Gateway's word on the HTTPRoute, from the route's `status.parents`.
fn report_route(req: &ComposeRequest, out: &mut Composition) {
    let route = out.resources[HTTP_ROUTE].manifest.object();
    let route = applied_manifest(route).unwrap_or(route);
    let namespace = str_at(route, &["metadata", "namespace"]);
    let name = str_at(route, &["metadata", "name"]);
    let gateway = gateway_of(route, namespace);
    let what = format!("HTTPRoute {namespace}/{name}");
    let observed = req.observed.get(HTTP_ROUTE);
    let parent = observed
        .as_ref()
        .and_then(|o| manifest_of(o))
        .and_then(|o| parent_status(o, &gateway, namespace));
    let Some(parent) = parent else {
        out.conditions.push(condition_unknown(
            ROUTED,
            "NotReported",
            format!(
                "no controller of Gateway {gateway} has reported on {what} yet (if this lasts, check that \
                 the Gateway exists and that a controller with Inference Extension support runs it)"
            ),
        ));
        return;
    };
    for (type_, refuses, decides) in [
        ("Accepted", "does not accept", "accepts"),
        (
            "ResolvedRefs",
            "cannot resolve the backend of",
            "resolves the backend of",
        ),
    ] {
        match parent_condition(parent, type_) {
            Some(("True", _, _)) => {}
            Some(("False", reason, message)) => {
                refused(
                    req,
                    type_,
                    (reason, message),
                    &format!("Gateway {gateway} {refuses} {what}"),
                    out,
                );
                return;
            }
            _ => {
                out.conditions.push(condition_unknown(
                    ROUTED,
                    "NotReported",
                    format!("Gateway {gateway} has not said yet whether it {decides} {what}"),
                ));
                return;
            }
        }
    }
    // The pool's own status, where the controller writes one: a Gateway can
    // accept the route and still refuse the pool or miss its endpoint picker.
    let pool = req.observed.get(INFERENCE_POOL);
    let pool = pool.as_ref().and_then(|o| manifest_of(o));
    if let Some(pool) = pool {
        let pool_namespace = str_at(pool, &["metadata", "namespace"]);
        let pool_what = format!(
            "InferencePool {pool_namespace}/{}",
            str_at(pool, &["metadata", "name"])
        );
        let said = parent_status(pool, &gateway, pool_namespace);
        for (type_, refuses) in [
            ("Accepted", "does not accept"),
            ("ResolvedRefs", "cannot resolve the endpoint picker of"),
        ] {
            if let Some(("False", reason, message)) = said.and_then(|p| parent_condition(p, type_))
            {
                refused(
                    req,
                    type_,
                    (reason, message),
                    &format!("Gateway {gateway} {refuses} {pool_what}"),
                    out,
                );
                return;
            }
        }
    }
    out.conditions.push(condition(
        ROUTED,
        true,
        "Accepted",
        format!("Gateway {gateway} routes {what} to its InferencePool"),
    ));
}

/// `Routed` False with the reason and message the controller said of its
/// condition `type_` (the type when it gave no reason) and `what` it
/// refuses; a warning when new.
fn refused(
    req: &ComposeRequest,
    type_: &str,
    (reason, message): (&str, &str),
    what: &str,
    out: &mut Composition,
) {
    let reason = if reason.is_empty() { type_ } else { reason };
    let message = match message {
        "" => what.to_string(),
        m => format!("{what}: {m}"),
    };
    push_condition(
        req,
        Some(reason),
        condition(ROUTED, false, reason, message),
        out,
    );
}

/// "namespace/name" of the route's Gateway (its first parent).
fn gateway_of(route: &Map<String, Value>, route_namespace: &str) -> String {
    let parent = route
        .get("spec")
        .and_then(|s| s.get("parentRefs"))
        .and_then(|p| p.get(0))
        .and_then(Value::as_object);
    parent.map_or_else(String::new, |p| gateway_of_ref(p, route_namespace))
}

/// The observed route's or pool's status for `gateway`, as its controller
/// wrote it.
fn parent_status<'a>(
    object: &'a Map<String, Value>,
    gateway: &str,
    object_namespace: &str,
) -> Option<&'a Map<String, Value>> {
    object
        .get("status")?
        .get("parents")?
        .as_array()?
        .iter()
        .filter_map(Value::as_object)
        .find(|p| {
            p.get("parentRef")
                .and_then(Value::as_object)
                .is_some_and(|r| gateway_of_ref(r, object_namespace) == gateway)
        })
}

/// "namespace/name" of a parent reference (by default in the namespace of
/// the object that holds it).
fn gateway_of_ref(parent_ref: &Map<String, Value>, object_namespace: &str) -> String {
    let namespace = match str_at(parent_ref, &["namespace"]) {
        "" => object_namespace,
        ns => ns,
    };
    format!("{namespace}/{}", str_at(parent_ref, &["name"]))
}

/// (status, reason, message) of the parent's condition `type_`.
fn parent_condition<'a>(
    parent: &'a Map<String, Value>,
    type_: &str,
) -> Option<(&'a str, &'a str, &'a str)> {
    parent
        .get("conditions")?
        .as_array()?
        .iter()
        .filter_map(Value::as_object)
        .find(|c| str_at(c, &["type"]) == type_)
        .map(|c| {
            (
                str_at(c, &["status"]),
                str_at(c, &["reason"]),
                str_at(c, &["message"]),
            )
        })
}
