//! Value categories for slot extraction: everyday things a user states a single current value for
//! (the coffee they order, the city they live in, the unit they read temperatures in). Knowing the
//! category lets "I always order a cappuccino" and "我最近改喝拿铁了" land in the same slot with
//! values in one canonical spelling, across languages.
//!
//! Each surface form is matched as a whole word in English text and as a substring in Chinese
//! text (the Chinese forms are also added to the segmenter's dictionary so they stay whole words
//! for keyword search).

use std::collections::HashMap;
use std::sync::OnceLock;

/// One category of values.
#[derive(Debug)]
pub(crate) struct Category {
    /// Attribute name used in the slot.
    pub attribute: &'static str,
    /// Words (English, lower-case, or Chinese) of which one must appear in the clause before a
    /// bare mention of a value counts as stating it. Empty: any mention counts.
    pub triggers: &'static [&'static str],
    /// Only explicit patterns ("I live in …") may use this category; a bare mention never does.
    pub pattern_only: bool,
    /// Specific categories win over generic ones when a clause mentions both ("喝咖啡都点馥芮白").
    pub generic: bool,
    /// Canonical value and its surface forms.
    pub values: &'static [(&'static str, &'static [&'static str])],
}

pub(crate) const CATEGORIES: &[Category] = &[
    Category {
        attribute: "coffee",
        triggers: &[],
        pattern_only: false,
        generic: false,
        values: &[
            ("espresso", &["espresso", "浓缩咖啡", "意式浓缩"]),
            ("americano", &["americano", "美式咖啡", "美式"]),
            ("latte", &["latte", "lattes", "拿铁"]),
            ("cappuccino", &["cappuccino", "cappuccinos", "卡布奇诺"]),
            (
                "flat white",
                &["flat white", "flat whites", "馥芮白", "澳白"],
            ),
            ("mocha", &["mocha", "摩卡"]),
            ("macchiato", &["macchiato", "玛奇朵"]),
            ("cold brew", &["cold brew", "冷萃"]),
            ("cortado", &["cortado"]),
            ("decaf", &["decaf", "低因咖啡"]),
        ],
    },
    Category {
        attribute: "drink",
        triggers: &[
            "drink",
            "drinks",
            "drinking",
            "prefer",
            "prefers",
            "like",
            "likes",
            "love",
            "loves",
            "order",
            "orders",
            "favourite",
            "favorite",
            "switched",
            "喝",
            "喜欢",
            "爱喝",
            "点",
            "改喝",
        ],
        pattern_only: false,
        generic: true,
        values: &[
            ("coffee", &["coffee", "咖啡"]),
            ("tea", &["tea", "喝茶", "茶水"]),
            ("green tea", &["green tea", "绿茶"]),
            ("black tea", &["black tea", "红茶"]),
            ("milk tea", &["milk tea", "bubble tea", "奶茶"]),
            ("hot chocolate", &["hot chocolate", "热巧克力"]),
            ("juice", &["juice", "果汁"]),
            ("sparkling water", &["sparkling water", "气泡水"]),
        ],
    },
    Category {
        attribute: "temperature unit",
        triggers: &[],
        pattern_only: false,
        generic: false,
        values: &[
            ("celsius", &["celsius", "centigrade", "摄氏度", "摄氏"]),
            ("fahrenheit", &["fahrenheit", "华氏度", "华氏"]),
        ],
    },
    Category {
        attribute: "measurement system",
        triggers: &[
            "unit",
            "units",
            "system",
            "measure",
            "measurements",
            "单位",
            "公制",
            "英制",
        ],
        pattern_only: false,
        generic: false,
        values: &[
            ("metric", &["metric", "公制"]),
            ("imperial", &["imperial", "英制"]),
        ],
    },
    Category {
        attribute: "diet",
        triggers: &[],
        pattern_only: false,
        generic: false,
        values: &[
            ("vegetarian", &["vegetarian", "素食者", "素食", "吃素"]),
            ("vegan", &["vegan", "纯素"]),
            ("pescatarian", &["pescatarian", "pescetarian"]),
            ("halal", &["halal", "清真"]),
            ("kosher", &["kosher"]),
            ("keto", &["keto", "生酮"]),
            ("gluten-free", &["gluten-free", "gluten free", "无麸质"]),
        ],
    },
    Category {
        attribute: "contact channel",
        triggers: &[
            "reach",
            "contact",
            "notify",
            "notification",
            "notifications",
            "alert",
            "alerts",
            "message",
            "ping",
            "联系",
            "通知",
            "找我",
        ],
        pattern_only: false,
        generic: false,
        values: &[
            ("email", &["email", "e-mail", "邮件", "电子邮件", "邮箱"]),
            ("sms", &["sms", "text message", "text messages", "短信"]),
            ("phone call", &["phone call", "phone", "电话"]),
            ("slack", &["slack"]),
            ("wechat", &["wechat", "微信"]),
            ("whatsapp", &["whatsapp"]),
            ("telegram", &["telegram"]),
            ("microsoft teams", &["microsoft teams", "ms teams"]),
            ("dingtalk", &["dingtalk", "钉钉"]),
            ("feishu", &["feishu", "飞书"]),
        ],
    },
    Category {
        attribute: "report format",
        triggers: &[
            "report",
            "reports",
            "summary",
            "summaries",
            "format",
            "write-up",
            "writeup",
            "document",
            "docs",
            "报告",
            "总结",
            "周报",
            "格式",
            "文档",
        ],
        pattern_only: false,
        generic: false,
        values: &[
            (
                "bullet points",
                &["bullet points", "bullet point", "bullets", "要点", "列表"],
            ),
            ("narrative", &["narrative", "prose", "长文", "叙述"]),
            ("charts", &["charts", "chart", "graphs", "图表"]),
            ("table", &["table", "tables", "表格"]),
            ("slides", &["slides", "slide deck", "幻灯片"]),
            ("pdf", &["pdf"]),
            ("markdown", &["markdown"]),
        ],
    },
    Category {
        attribute: "os",
        triggers: &[
            "use",
            "uses",
            "using",
            "used",
            "run",
            "runs",
            "running",
            "switch",
            "switched",
            "installed",
            "install",
            "prefer",
            "prefers",
            "main",
            "laptop",
            "computer",
            "machine",
            "desktop",
            "os",
            "system",
            "装",
            "用",
            "系统",
            "电脑",
            "笔记本",
            "换",
        ],
        pattern_only: false,
        generic: false,
        values: &[
            ("windows", &["windows"]),
            ("macos", &["macos", "mac os", "os x", "osx"]),
            ("linux", &["linux"]),
            ("ubuntu", &["ubuntu"]),
            ("debian", &["debian"]),
            ("fedora", &["fedora"]),
            ("arch linux", &["arch linux"]),
            ("chromeos", &["chromeos", "chrome os"]),
        ],
    },
    Category {
        attribute: "editor",
        triggers: &[
            "use",
            "uses",
            "using",
            "prefer",
            "prefers",
            "favourite",
            "favorite",
            "switch",
            "switched",
            "editor",
            "ide",
            "编辑器",
            "用",
            "喜欢",
            "换",
        ],
        pattern_only: false,
        generic: false,
        values: &[
            ("vim", &["vim"]),
            ("neovim", &["neovim", "nvim"]),
            ("emacs", &["emacs"]),
            ("vs code", &["vs code", "vscode", "visual studio code"]),
            ("intellij", &["intellij", "intellij idea"]),
            ("pycharm", &["pycharm"]),
            ("sublime text", &["sublime text"]),
            ("xcode", &["xcode"]),
        ],
    },
    Category {
        attribute: "programming language",
        triggers: &[
            "prefer",
            "prefers",
            "favourite",
            "favorite",
            "language",
            "switch",
            "switched",
            "write",
            "writes",
            "written",
            "code",
            "coding",
            "语言",
            "写",
            "喜欢",
        ],
        pattern_only: false,
        generic: false,
        values: &[
            ("python", &["python"]),
            ("rust", &["rust"]),
            ("golang", &["golang"]),
            ("java", &["java"]),
            ("javascript", &["javascript"]),
            ("typescript", &["typescript"]),
            ("kotlin", &["kotlin"]),
            ("c++", &["c++"]),
            ("c#", &["c#"]),
            ("php", &["php"]),
            ("scala", &["scala"]),
            ("haskell", &["haskell"]),
            ("elixir", &["elixir"]),
        ],
    },
    Category {
        attribute: "web framework",
        triggers: &[
            "use",
            "uses",
            "using",
            "built",
            "build",
            "written",
            "write",
            "migrated",
            "migrate",
            "rewritten",
            "rewrote",
            "switch",
            "switched",
            "moved",
            "backend",
            "api",
            "framework",
            "server",
            "endpoints",
            "service",
            "用",
            "基于",
            "框架",
            "接口",
            "后端",
            "重写",
            "迁移",
        ],
        pattern_only: false,
        generic: false,
        values: &[
            ("django", &["django"]),
            ("flask", &["flask"]),
            ("fastapi", &["fastapi"]),
            ("spring boot", &["spring boot", "springboot"]),
            ("ruby on rails", &["ruby on rails", "rails"]),
            ("express", &["express.js", "expressjs"]),
            ("next.js", &["next.js", "nextjs"]),
            ("nestjs", &["nestjs"]),
            ("laravel", &["laravel"]),
            ("asp.net", &["asp.net"]),
            ("actix", &["actix", "actix-web"]),
            ("axum", &["axum"]),
        ],
    },
    Category {
        attribute: "database",
        triggers: &[
            "use",
            "uses",
            "using",
            "database",
            "db",
            "migrated",
            "migrate",
            "switch",
            "switched",
            "store",
            "stored",
            "moved",
            "数据库",
            "用",
            "迁移",
            "存",
        ],
        pattern_only: false,
        generic: false,
        values: &[
            ("postgresql", &["postgresql", "postgres"]),
            ("mysql", &["mysql"]),
            ("sqlite", &["sqlite"]),
            ("mongodb", &["mongodb", "mongo"]),
            ("redis", &["redis"]),
            ("dynamodb", &["dynamodb"]),
            ("cassandra", &["cassandra"]),
        ],
    },
    Category {
        attribute: "cloud provider",
        triggers: &[
            "use", "uses", "using", "cloud", "host", "hosted", "deploy", "deployed", "migrated",
            "migrate", "moved", "云", "部署", "迁移", "用",
        ],
        pattern_only: false,
        generic: false,
        values: &[
            ("aws", &["aws", "amazon web services"]),
            ("gcp", &["gcp", "google cloud"]),
            ("azure", &["azure"]),
            ("alibaba cloud", &["alibaba cloud", "aliyun", "阿里云"]),
            ("tencent cloud", &["tencent cloud", "腾讯云"]),
        ],
    },
    Category {
        attribute: "theme",
        triggers: &[],
        pattern_only: false,
        generic: false,
        values: &[
            (
                "dark mode",
                &[
                    "dark mode",
                    "dark theme",
                    "深色模式",
                    "暗色模式",
                    "夜间模式",
                ],
            ),
            ("light mode", &["light mode", "light theme", "浅色模式"]),
        ],
    },
    Category {
        attribute: "response language",
        triggers: &[
            "reply", "replies", "respond", "answer", "answers", "speak", "回复", "回答",
        ],
        pattern_only: false,
        generic: false,
        values: &[
            ("english", &["english", "英语", "英文"]),
            (
                "chinese",
                &["chinese", "mandarin", "中文", "汉语", "普通话"],
            ),
            ("japanese", &["japanese", "日语", "日文"]),
            ("german", &["german", "德语"]),
            ("french", &["french", "法语"]),
            ("spanish", &["spanish", "西班牙语"]),
        ],
    },
    Category {
        attribute: "tier",
        triggers: &[],
        pattern_only: true,
        generic: false,
        values: &[
            ("platinum", &["platinum", "白金", "铂金"]),
            ("gold", &["gold", "金牌", "黄金"]),
            ("silver", &["silver", "银牌", "白银"]),
            ("bronze", &["bronze", "铜牌"]),
            ("enterprise", &["enterprise", "企业版"]),
            ("premium", &["premium", "高级版"]),
            ("pro", &["pro", "专业版"]),
            ("basic", &["basic", "基础版"]),
            ("free", &["free", "免费版"]),
        ],
    },
    Category {
        attribute: "home",
        triggers: &[],
        pattern_only: true,
        generic: false,
        values: &[
            ("beijing", &["beijing", "北京"]),
            ("shanghai", &["shanghai", "上海"]),
            ("shenzhen", &["shenzhen", "深圳"]),
            ("guangzhou", &["guangzhou", "广州"]),
            ("hangzhou", &["hangzhou", "杭州"]),
            ("chengdu", &["chengdu", "成都"]),
            ("wuhan", &["wuhan", "武汉"]),
            ("nanjing", &["nanjing", "南京"]),
            ("xi'an", &["xi'an", "xian", "西安"]),
            ("suzhou", &["suzhou", "苏州"]),
            ("tianjin", &["tianjin", "天津"]),
            ("chongqing", &["chongqing", "重庆"]),
            ("hong kong", &["hong kong", "香港"]),
            ("taipei", &["taipei", "台北"]),
            ("singapore", &["singapore", "新加坡"]),
            ("tokyo", &["tokyo", "东京"]),
            ("osaka", &["osaka", "大阪"]),
            ("seoul", &["seoul", "首尔"]),
            ("bangkok", &["bangkok", "曼谷"]),
            ("london", &["london", "伦敦"]),
            ("paris", &["paris", "巴黎"]),
            ("berlin", &["berlin", "柏林"]),
            ("munich", &["munich", "慕尼黑"]),
            ("hamburg", &["hamburg", "汉堡市"]),
            ("amsterdam", &["amsterdam", "阿姆斯特丹"]),
            ("madrid", &["madrid", "马德里"]),
            ("barcelona", &["barcelona", "巴塞罗那"]),
            ("rome", &["rome", "罗马"]),
            ("milan", &["milan", "米兰"]),
            ("zurich", &["zurich", "苏黎世"]),
            ("vienna", &["vienna", "维也纳"]),
            ("dublin", &["dublin", "都柏林"]),
            ("stockholm", &["stockholm", "斯德哥尔摩"]),
            ("copenhagen", &["copenhagen", "哥本哈根"]),
            ("lisbon", &["lisbon", "里斯本"]),
            ("prague", &["prague", "布拉格"]),
            ("warsaw", &["warsaw", "华沙"]),
            ("moscow", &["moscow", "莫斯科"]),
            ("istanbul", &["istanbul", "伊斯坦布尔"]),
            ("dubai", &["dubai", "迪拜"]),
            ("mumbai", &["mumbai", "孟买"]),
            ("bangalore", &["bangalore", "bengaluru", "班加罗尔"]),
            ("sydney", &["sydney", "悉尼"]),
            ("melbourne", &["melbourne", "墨尔本"]),
            ("toronto", &["toronto", "多伦多"]),
            ("vancouver", &["vancouver", "温哥华"]),
            ("new york", &["new york", "new york city", "nyc", "纽约"]),
            ("boston", &["boston", "波士顿"]),
            ("chicago", &["chicago", "芝加哥"]),
            ("seattle", &["seattle", "西雅图"]),
            ("san francisco", &["san francisco", "旧金山"]),
            ("los angeles", &["los angeles", "洛杉矶"]),
            ("austin", &["austin", "奥斯汀"]),
            ("denver", &["denver", "丹佛"]),
            ("washington", &["washington", "washington dc", "华盛顿"]),
        ],
    },
];

/// Attribute of the category that holds places; its values are also entity names.
pub(crate) const PLACE_ATTRIBUTE: &str = "home";

/// Chinese surface forms, with a part-of-speech tag for the segmenter: places as `ns`, the rest
/// as plain nouns (they are values, not names).
pub(crate) fn chinese_words() -> impl Iterator<Item = (&'static str, &'static str)> {
    CATEGORIES.iter().flat_map(|cat| {
        let tag = if cat.attribute == PLACE_ATTRIBUTE {
            "ns"
        } else {
            "n"
        };
        cat.values
            .iter()
            .flat_map(|(_, forms)| forms.iter())
            .filter(|f| f.chars().any(crate::script::is_han))
            .map(move |f| (*f, tag))
    })
}

/// A surface form's category and canonical value.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub category: &'static Category,
    pub canonical: &'static str,
}

/// Every surface form (English and Chinese) with its category and canonical value.
pub(crate) fn surface_index() -> &'static HashMap<&'static str, Entry> {
    static INDEX: OnceLock<HashMap<&'static str, Entry>> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut map = HashMap::new();
        for category in CATEGORIES {
            for (canonical, forms) in category.values {
                for form in *forms {
                    map.entry(*form).or_insert(Entry {
                        category,
                        canonical,
                    });
                }
            }
        }
        map
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_are_normalised() {
        for cat in CATEGORIES {
            for (canon, forms) in cat.values {
                assert_eq!(*canon, canon.to_lowercase());
                for f in *forms {
                    assert_eq!(*f, f.to_lowercase(), "{f}");
                    assert_eq!(f.trim(), *f);
                }
            }
        }
        assert!(chinese_words().any(|(w, t)| w == "上海" && t == "ns"));
        assert!(chinese_words().any(|(w, t)| w == "拿铁" && t == "n"));
        assert_eq!(surface_index()["拿铁"].canonical, "latte");
        assert_eq!(surface_index()["上海"].category.attribute, PLACE_ATTRIBUTE);
    }
}
