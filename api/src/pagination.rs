//! `limit` and `page` query parameters: `limit` 1–500, default 50; `page`
//! from 1, default 1; anything else is a 400 naming the parameter.

use reelfarm_domain::error_key::ErrorKey;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::error::{ApiError, FieldError};

pub const DEFAULT_LIMIT: u32 = 50;
pub const MAX_LIMIT: u32 = 500;
/// The largest page number: what the OpenAPI document's `int32` can say.
pub const MAX_PAGE: u32 = i32::MAX as u32;

/// Raw paging parameters, validated by [`PageQuery::parse`].
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Items per page, 1–500 (default 50).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 500)]
    pub limit: Option<String>,
    /// Page number from 1 (default 1), at most 2³¹ − 1 (the document's `int32`).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 2147483647_u64)]
    pub page: Option<String>,
}

/// A validated page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub limit: u32,
    pub page: u32,
}

impl Page {
    pub fn offset(self) -> u64 {
        u64::from(self.page - 1) * u64::from(self.limit)
    }
}

impl PageQuery {
    pub fn parse(&self) -> Result<Page, ApiError> {
        let mut errors = Vec::new();
        let mut number = |name: &str, raw: &Option<String>, default: u32, max: u32| match raw.as_deref().map(str::trim)
        {
            None => default,
            Some(s) => match s.parse::<u32>() {
                Ok(n) if (1..=max).contains(&n) => n,
                _ => {
                    errors.push(FieldError::new(
                        name,
                        ErrorKey::Invalid,
                        format!("must be a whole number from 1 to {max}"),
                    ));
                    default
                }
            },
        };
        let limit = number("limit", &self.limit, DEFAULT_LIMIT, MAX_LIMIT);
        let page = number("page", &self.page, 1, MAX_PAGE);
        if errors.is_empty() {
            Ok(Page { limit, page })
        } else {
            Err(ApiError::validation(errors))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(limit: Option<&str>, page: Option<&str>) -> PageQuery {
        PageQuery { limit: limit.map(Into::into), page: page.map(Into::into) }
    }

    #[test]
    fn defaults_and_bounds() {
        assert_eq!(q(None, None).parse().unwrap(), Page { limit: 50, page: 1 });
        let p = q(Some("2"), Some("3")).parse().unwrap();
        assert_eq!((p.limit, p.page, p.offset()), (2, 3, 4));
        assert_eq!(q(Some("500"), None).parse().unwrap().limit, 500);
        assert_eq!(q(None, Some("2147483647")).parse().unwrap().page, 2147483647);
        for (limit, page, field) in [
            (Some("0"), None, "limit"),
            (Some("-1"), None, "limit"),
            (Some("501"), None, "limit"),
            (Some("ten"), None, "limit"),
            (None, Some("0"), "page"),
            (None, Some("1.5"), "page"),
            (None, Some("99999999999"), "page"),
            (None, Some("2147483648"), "page"),
        ] {
            let e = q(limit, page).parse().unwrap_err();
            assert_eq!(e.body().errors[0].field, field);
        }
    }
}
